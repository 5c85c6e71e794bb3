"""A saved configuration's earlier versions (kept by the library at every overwrite), and restoring one."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from vramdesk.storage.library import Entry, LibraryError, ScenarioLibrary, Version
from vramdesk.storage.scenarios import ScenarioFileError

from .core_text import localize
from .i18n import tr
from .presenter import describe_error
from .work_history import scenario_summary


def version_text(v: Version) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(v.replaced)) if v.replaced else "?"
    if v.scenario is None:
        return f"{when} · {tr('cannot be read')}: {localize(v.error or '')}"
    return f"{when} · {tr('revision')} {v.revision} · {scenario_summary(v.scenario, tr)}"


class VersionsDialog(QDialog):
    """The versions of one entry, newest first; Restore puts the selected one back (itself undoable: what the
    entry held becomes a version). Signal ``restored(object)`` with the entry as restored."""

    restored = Signal(object)

    def __init__(self, library: ScenarioLibrary, entry: Entry, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.library = library
        self.entry = entry
        self.setWindowTitle(tr("Earlier versions of “{name}”").format(name=entry.name))
        self.list = QListWidget(self)
        self.list.setAccessibleName(tr("Earlier versions"))
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list.itemDoubleClicked.connect(lambda _item: self.restore_selected())
        self.caption = QLabel(self)
        self.caption.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        self.restore_button = QPushButton(tr("Restore"), self)
        buttons.addButton(self.restore_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.restore_button.clicked.connect(lambda _c=False: self.restore_selected())
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.caption)
        layout.addWidget(self.list, 1)
        layout.addWidget(buttons)
        self.resize(760, 380)
        self.reload()

    def reload(self) -> None:
        self.versions = self.library.versions(self.entry.id)
        self.list.clear()
        for v in self.versions:
            item = QListWidgetItem(version_text(v))
            item.setData(Qt.ItemDataRole.UserRole, v.id)
            if v.scenario is None:
                item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEnabled)
            self.list.addItem(item)
        if self.versions:
            self.caption.setText(
                tr(
                    "Kept each time “{name}” was saved over, newest first; restoring one keeps the current content "
                    "as a version too."
                ).format(name=self.entry.name)
            )
            self.list.setCurrentRow(0)
        else:
            self.caption.setText(
                tr("“{name}” has not been saved over yet: no earlier versions.").format(name=self.entry.name)
            )
        self.restore_button.setEnabled(bool(self.versions))

    def restore_selected(self, version_id: str | None = None) -> Entry | None:
        if version_id is None:
            item = self.list.currentItem()
            if item is None:
                return None
            version_id = str(item.data(Qt.ItemDataRole.UserRole))
        try:
            entry = self.library.restore(self.entry.id, version_id)
        except (LibraryError, ScenarioFileError, OSError) as err:
            QMessageBox.warning(self, "vramdesk", localize(describe_error(err)))
            return None
        self.entry = entry
        self.restored.emit(entry)
        self.reload()
        return entry
