"""The main window's work in the scenario library: saving it (back to its entry, asking first where that would
replace a plan the user did not mean to, or as a new configuration), opening an entry from the library window,
following a restored version, the compare view, and the autosave that a crash leaves to restore.

:class:`LibraryActions` is a part of :class:`vramdesk.ui.main_window.MainWindow` (a mixin): the attributes and
methods it declares under ``TYPE_CHECKING`` are the window's.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QInputDialog, QLineEdit, QMainWindow, QMessageBox

from vramdesk.core.gpu import GpuSpec
from vramdesk.core.plan_name import has_generated_name, plan_name
from vramdesk.core.scenario import Scenario
from vramdesk.storage.library import NAME_MAX, Autosave, Entry, LibraryError, ScenarioLibrary, StaleEntryError
from vramdesk.storage.scenarios import ScenarioFileError

from .core_text import localize
from .forms import WorkloadForm
from .i18n import tr
from .presenter import Evaluation, describe_error, scenario_from_form

if TYPE_CHECKING:
    _Window = QMainWindow
else:
    _Window = object


class LibraryActions(_Window):
    """Save to and open from the library; autosave and the offer to restore after a crash."""

    if TYPE_CHECKING:
        form: WorkloadForm
        _library: ScenarioLibrary | None
        _scenario: Scenario
        _saved: Scenario | None
        _notice: str | None
        _detected_specs: dict[str, GpuSpec]
        _undo_label: str | None
        _autosave: bool
        _autosave_timer: QTimer
        library_entry_id: str | None
        library_entry_revision: int | None
        library_window: Any
        scenario_path: Path | None
        autosave_store: Autosave

        @property
        def modified(self) -> bool: ...
        def set_scenario(self, scenario: Scenario) -> None: ...
        def current_scenario(self) -> Scenario | None: ...
        def update_title(self) -> None: ...
        def _keep_undo_state(self) -> None: ...

    @property
    def library(self) -> ScenarioLibrary:
        if self._library is None:
            self._library = ScenarioLibrary()
        return self._library

    def _current_for_saving(self) -> Scenario | None:
        try:
            return scenario_from_form(self._scenario, self.form.values(), self._detected_specs)
        except ValueError as err:
            QMessageBox.warning(self, "vramdesk", localize(describe_error(err)))
            return None

    def save_to_library(self, name: str | None = None, *, as_new: bool = False) -> str | None:
        """Save the current work in the library: back to the entry it came from, or as a new entry
        (asking for a name unless ``name`` is given). Returns the entry id, None when nothing was saved.

        Saving back never replaces a plan the user did not mean to: when the form now plans another model
        than the entry holds, or another window or process saved the entry since, it asks once (replace, save as
        a new configuration, or cancel). Whatever is replaced is kept as an earlier version of the entry."""
        scenario = self._current_for_saving()
        if scenario is None:
            return None
        try:
            if self.library_entry_id is not None and not as_new:
                outcome = self._save_back(self.library_entry_id, scenario)
                if outcome == "cancel":
                    return None
                if isinstance(outcome, str):  # "new": save as a new configuration instead
                    return self.save_to_library(as_new=True)
                entry = outcome
            else:
                if name is None:
                    name = self._ask_name(scenario)
                    if name is None:
                        return None
                entry = self.library.save(scenario, name=name)
        except (LibraryError, ScenarioFileError, OSError) as err:
            QMessageBox.warning(self, "vramdesk", localize(describe_error(err)))
            return None
        self._saved_entry(entry)
        text = tr("Saved") + f" “{entry.name}”"
        if entry.revision > 1:
            text += " — " + tr("the earlier content is kept (Library → History)")
        self.statusBar().showMessage(text, 8000)
        if self.library_window is not None:
            self.library_window.reload()
        return entry.id

    def _ask_name(self, scenario: Scenario) -> str | None:
        dialog = QInputDialog(self)
        dialog.setWindowTitle(tr("Save as"))
        dialog.setLabelText(tr("Name:"))
        dialog.setTextValue(scenario.name or plan_name(scenario))
        line = dialog.findChild(QLineEdit)
        if line is not None:
            line.setMaxLength(NAME_MAX)
        if not dialog.exec():
            return None
        return dialog.textValue()

    def _save_back(self, entry_id: str, scenario: Scenario) -> Entry | str:
        """Write ``scenario`` into its entry, asking first where that would surprise; an Entry, or "new" / "cancel"."""
        try:
            on_disk = self.library.get(entry_id)
        except LibraryError:
            return "new"  # deleted meanwhile (another window, by hand): save as new under the form's name
        reason = None
        if on_disk.scenario.model.id != scenario.model.id:
            reason = tr("“{name}” holds a plan for {old}; the form now plans {new}.").format(
                name=on_disk.name, old=on_disk.scenario.model.id, new=scenario.model.id
            )
        elif self.library_entry_revision is not None and on_disk.revision != self.library_entry_revision:
            reason = tr("“{name}” was saved by another window or process since you opened it.").format(
                name=on_disk.name
            )
        expected = self.library_entry_revision
        if reason is not None:
            choice = self.ask_save_conflict(reason, on_disk.name)
            if choice != "replace":
                return choice
            expected = on_disk.revision
        try:
            entry = self.library.update(entry_id, scenario, expected_revision=expected)
        except StaleEntryError:  # saved by someone else between our read and our write: ask again
            self.library_entry_revision = None
            return self._save_back(entry_id, scenario)
        generated = has_generated_name(on_disk.scenario) and has_generated_name(scenario)
        if generated and scenario.name and scenario.name != entry.name:
            # the entry was named by its plan (the name Save as proposed): the name follows the plan it now holds
            entry = self.library.rename(entry.id, scenario.name)
        return entry

    def ask_save_conflict(self, reason: str, name: str) -> str:
        """Replace the saved configuration, save as a new one, or cancel: "replace", "new" or "cancel"."""
        box = QMessageBox(self)
        box.setIcon(QMessageBox.Icon.Question)
        box.setWindowTitle(tr("Save"))
        box.setText(reason)
        box.setInformativeText(tr("Replace it? What it holds now is kept as an earlier version (Library → History)."))
        as_new = box.addButton(tr("Save as a new configuration"), QMessageBox.ButtonRole.AcceptRole)
        replace = box.addButton(tr("Replace “{name}”").format(name=name), QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(as_new)
        box.exec()
        clicked = box.clickedButton()
        if clicked is as_new:
            return "new"
        if clicked is replace:
            return "replace"
        return "cancel"

    def _saved_entry(self, entry: Entry) -> None:
        """The form now belongs to ``entry`` as saved (its revision, its content: no unsaved changes)."""
        self.library_entry_id = entry.id
        self.library_entry_revision = entry.revision
        self._scenario = entry.scenario
        self._saved = entry.scenario
        self._keep_undo_state()
        self.update_title()

    def open_library(self) -> Any:
        from .compare import LibraryWindow

        if self.library_window is None:
            self.library_window = LibraryWindow(self.library, self, current=self.current_scenario)
            self.library_window.open_requested.connect(self._open_from_library)
            self.library_window.entry_restored.connect(self._on_entry_restored)
        self.library_window.show()
        self.library_window.raise_()
        return self.library_window

    def open_compare(self) -> Any:
        window = self.open_library()
        window.include_current.setChecked(True)
        return window

    def _open_from_library(self, scenario: Scenario) -> None:
        win = self.library_window
        entry = win.selected() if win is not None else None
        writable = entry is not None and not entry.read_only
        self.library_entry_id = entry.id if writable and entry is not None else None
        self.library_entry_revision = entry.revision if writable and entry is not None else None
        self._notice = entry.note if entry is not None else None
        self.scenario_path = None
        self._saved = scenario
        self.set_scenario(scenario)

    def _on_entry_restored(self, entry: Entry) -> None:
        """An earlier version was restored in the library: the work open from that entry follows (an undoable
        step), unless it has unsaved changes (then the next save asks, as the entry's revision moved on)."""
        if entry.id != self.library_entry_id or self.modified:
            return
        self.library_entry_revision = entry.revision
        self._saved = entry.scenario
        self._undo_label = tr("Restore an earlier version")
        self.set_scenario(entry.scenario)

    # ------------------------------------------------------------------ autosave
    def _after_estimate(self, ev: Evaluation) -> None:
        if self.library_window is not None:
            self.library_window.current_changed()
        if self._autosave and ev.scenario is not None:
            self._autosave_timer.start()

    def autosave_now(self) -> None:
        self._autosave_timer.stop()
        scenario = self.current_scenario()
        if scenario is None:
            return
        try:
            self.autosave_store.write(scenario)
        except OSError as err:
            self.statusBar().showMessage(tr("Autosave failed:") + " " + localize(describe_error(err)), 6000)

    def offer_restore(self, ask: bool = True) -> bool:
        """After a crash (a window's autosave is left and its process is gone): offer to restore that work, the
        newest first (one per start). It is kept either way (``autosave/settled``). True when it was restored."""
        orphans = self.autosave_store.orphans()
        if not orphans:
            return False
        orphan = orphans[0]
        scenario = orphan.scenario
        if ask:
            answer = QMessageBox.question(
                self,
                "vramdesk",
                tr("vramdesk did not close properly last time. Restore the work you had then?")
                + f"\n{scenario.name or scenario.model.id}",
            )
            if answer != QMessageBox.StandardButton.Yes:
                self.autosave_store.settle(orphan)
                return False
        self.autosave_store.settle(orphan)
        self.set_scenario(scenario)
        return True
