"""The window never replaces a saved configuration behind the user's back (issue 18): Ctrl+S after the model
changed asks once, a save over another window's newer save asks, the title names the configuration and marks
unsaved changes, undo / redo cover form edits, applied suggestions and opens, and an earlier version can be
restored from the library window."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from uiwindow import shown_window

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.scenario import Scenario
from vramdesk.storage.library import ScenarioLibrary
from vramdesk.ui.main_window import MainWindow
from vramdesk.ui.work_history import change_text, same_plan

OTHER_MODEL = "meta-llama/Llama-3.1-70B"


@pytest.fixture
def window(qtbot, tmp_path: Path) -> MainWindow:
    return shown_window(qtbot, tmp_path)


class Asker:
    """Stands in for the save-conflict question: records what it was asked, answers what the test queued."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []
        self.replies: list[str] = []

    def __call__(self, reason: str, name: str) -> str:
        self.asked.append((reason, name))
        return self.replies.pop(0) if self.replies else "cancel"


@pytest.fixture
def asker(window: MainWindow, monkeypatch: pytest.MonkeyPatch) -> Asker:
    a = Asker()
    monkeypatch.setattr(window, "ask_save_conflict", a)
    return a


def batch_of(s: Scenario) -> int:
    return s.workload.batch  # type: ignore[union-attr]


def test_ctrl_s_after_switching_the_model_asks_and_cancel_keeps_the_saved_plan(
    qtbot, window: MainWindow, asker: Asker
) -> None:
    entry_id = window.save_to_library(name="Qwen3-4B on a 4090")
    assert entry_id is not None
    saved = window.library.get(entry_id).scenario
    window.choose_model(OTHER_MODEL)
    window.activateWindow()
    qtbot.keyClick(window, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)  # Ctrl+S, as the user pressed it
    [(reason, _name)] = asker.asked
    assert OTHER_MODEL in reason and DEFAULT_SCENARIO.model.id in reason
    assert window.library.get(entry_id).scenario == saved  # cancelled: nothing written
    assert window.isWindowModified()


def test_asked_save_as_new_keeps_both_plans(window: MainWindow, asker: Asker) -> None:
    entry_id = window.save_to_library(name="small plan")
    assert entry_id is not None
    window.choose_model(OTHER_MODEL)
    asker.replies.append("new")
    window._ask_name = lambda _sc: "big plan"  # type: ignore[method-assign]  # "new" asks for a name
    new_id = window.save_to_library()
    assert new_id is not None and new_id != entry_id
    assert window.library.get(entry_id).scenario.model.id == DEFAULT_SCENARIO.model.id
    assert window.library.get(new_id).scenario.model.id == OTHER_MODEL
    assert window.library_entry_id == new_id and not window.isWindowModified()
    # the next Ctrl+S goes to the new entry without asking again
    window.widget("batch").setValue(3)
    window.estimate_now()
    assert window.save_to_library() == new_id and len(asker.asked) == 1


def test_asked_replace_keeps_the_replaced_plan_as_a_version(window: MainWindow, asker: Asker) -> None:
    entry_id = window.save_to_library(name="plan")
    assert entry_id is not None
    window.choose_model(OTHER_MODEL)
    asker.replies.append("replace")
    assert window.save_to_library() == entry_id
    assert window.library.get(entry_id).scenario.model.id == OTHER_MODEL
    [old] = window.library.versions(entry_id)
    assert old.scenario is not None and old.scenario.model.id == DEFAULT_SCENARIO.model.id
    # asked once: the same model saved again does not ask
    window.widget("batch").setValue(2)
    window.estimate_now()
    assert window.save_to_library() == entry_id and len(asker.asked) == 1


def test_a_save_over_another_windows_newer_save_asks(window: MainWindow, asker: Asker) -> None:
    entry_id = window.save_to_library(name="shared plan")
    assert entry_id is not None
    other = window.library.get(entry_id).scenario
    data = other.model_dump()
    data["workload"]["batch"] = 9
    window.library.update(entry_id, Scenario.model_validate(data))  # another window / the command line
    window.widget("batch").setValue(4)
    window.estimate_now()
    assert window.save_to_library() is None  # cancelled
    assert "another window or process" in asker.asked[0][0]
    assert batch_of(window.library.get(entry_id).scenario) == 9
    asker.replies.append("replace")
    assert window.save_to_library() == entry_id
    assert batch_of(window.library.get(entry_id).scenario) == 4
    assert next(batch_of(v.scenario) for v in window.library.versions(entry_id) if v.scenario) == 9


def test_title_names_the_configuration_and_marks_unsaved_changes(window: MainWindow) -> None:
    assert not window.isWindowModified() and window.windowTitle() == f"{DEFAULT_SCENARIO.name}[*] — vramdesk"
    window.choose_model(OTHER_MODEL)
    # the first start's name is generated: it follows the plan (never "Qwen3-4B ..." for Llama's)
    assert window.windowTitle() == "Llama-3.1-70B on an RTX 4090[*] — vramdesk"
    window.choose_model(DEFAULT_SCENARIO.model.id)
    window.widget("batch").setValue(5)
    window.estimate_now()
    assert window.isWindowModified()
    entry_id = window.save_to_library(name="My 4090 plan")
    assert entry_id is not None
    assert window.windowTitle() == "My 4090 plan[*] — vramdesk" and not window.isWindowModified()
    window.widget("batch").setValue(6)
    window.estimate_now()
    assert window.isWindowModified()
    window.widget("batch").setValue(5)
    window.estimate_now()
    assert not window.isWindowModified()  # back to what was saved


def test_undo_and_redo_form_edits(qtbot, window: MainWindow) -> None:
    assert not window.action_undo.isEnabled()
    window.widget("batch").setValue(4)
    window.estimate_now()
    window.widget("output_len").setValue(1024)
    window.estimate_now()
    assert window.undo_stack.count() == 2
    assert "output len 512 → 1,024" in window.action_undo.text()
    window.action_undo.trigger()
    assert window.widget("output_len").value() == 512 and window.widget("batch").value() == 4
    window.activateWindow()
    window.setFocus()
    qtbot.keyClick(window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert window.widget("batch").value() == 1 and not window.isWindowModified()
    window.action_redo.trigger()
    window.action_redo.trigger()
    assert window.widget("batch").value() == 4 and window.widget("output_len").value() == 1024
    assert window.evaluation is not None and window.evaluation.scenario is not None
    assert batch_of(window.evaluation.scenario) == 4  # the estimate follows the form


def test_edits_of_one_field_in_a_row_are_one_undo_step(window: MainWindow) -> None:
    for v in (2, 3, 4, 5):
        window.widget("batch").setValue(v)
        window.estimate_now()
    assert window.undo_stack.count() == 1
    window.action_undo.trigger()
    assert window.widget("batch").value() == 1


def test_an_applied_suggestion_can_be_undone(window: MainWindow) -> None:
    window.choose_model(OTHER_MODEL)
    window.gpu_combo.setCurrentIndex(window.gpu_combo.findData("RTX 4090"))
    window.estimate_now()
    assert window.evaluation is not None and window.evaluation.view is not None
    assert window.evaluation.view.verdict == "does not fit"
    window.advise_now()
    assert window.wait_idle(30_000)
    for _ in range(200):
        if window._change_options:
            break
        window.wait_idle(100)
    assert window._change_options, "no suggestion to apply"
    before = window.form_values()
    window.apply_change(0)
    assert window.form_values() != before
    assert window.action_undo.text().startswith("Undo Apply")
    window.action_undo.trigger()
    assert window.form_values() == before


def test_undo_of_an_open_goes_back_to_the_entry_that_was_open(window: MainWindow) -> None:
    lib = window.library
    first_id = window.save_to_library(name="first")
    assert first_id is not None
    data = DEFAULT_SCENARIO.model_dump()
    data["workload"]["batch"] = 7
    other = lib.save(Scenario.model_validate(data), name="second")
    win = window.open_library()
    win.select(other.id)
    win.open_selected()
    assert window.library_entry_id == other.id and window.widget("batch").value() == 7
    window.action_undo.trigger()
    assert window.library_entry_id == first_id and window.widget("batch").value() == 1
    win.close()


def test_an_earlier_version_is_restored_from_the_library_window(qtbot, window: MainWindow) -> None:
    entry_id = window.save_to_library(name="plan")
    assert entry_id is not None
    window.widget("batch").setValue(8)
    window.estimate_now()
    assert window.save_to_library() == entry_id
    win = window.open_library()
    qtbot.addWidget(win)
    win.select(entry_id)
    dialog = win.show_history()
    assert dialog is not None and dialog.list.count() == 1 and "batch 1," in dialog.list.item(0).text()
    restored = dialog.restore_selected()
    assert restored is not None and batch_of(restored.scenario) == 1
    assert batch_of(window.library.get(entry_id).scenario) == 1
    # the window had that entry open without changes: it shows the restored plan, and the save goes through
    assert window.widget("batch").value() == 1 and not window.isWindowModified()
    assert dialog.list.count() == 2  # the batch-8 content is a version now: the restore can be undone too
    dialog.close()
    win.close()


def test_save_as_refuses_an_over_long_name_without_losing_anything(window: MainWindow, monkeypatch) -> None:
    warnings: list[str] = []
    monkeypatch.setattr("vramdesk.ui.window_library.QMessageBox.warning", lambda _p, _t, text: warnings.append(text))
    first = window.save_to_library(name="keep")
    assert first is not None
    assert window.save_to_library(name="x" * 300, as_new=True) is None
    assert warnings and "at most 200 characters" in warnings[0]
    assert [e.id for e in window.library.entries()] == [first] and window.library_entry_id == first


def test_helpers() -> None:
    from vramdesk.ui.presenter import form_from_scenario

    a = form_from_scenario(DEFAULT_SCENARIO)
    data = DEFAULT_SCENARIO.model_dump()
    data["workload"]["batch"] = 8
    b = form_from_scenario(Scenario.model_validate(data))
    assert change_text(a, b) == "batch 1 → 8"
    assert same_plan(DEFAULT_SCENARIO, DEFAULT_SCENARIO.model_copy(update={"name": "x"}))
    assert not same_plan(DEFAULT_SCENARIO, None)


def test_ctrl_z_in_an_untouched_field_undoes_the_form(qtbot, window: MainWindow) -> None:
    """A spin box's line edit would take Ctrl+Z for its own (empty) text history and do nothing."""
    window.widget("batch").setValue(3)
    window.estimate_now()
    line = window.widget("output_len").lineEdit()
    window.activateWindow()
    line.setFocus()
    qtbot.waitUntil(line.hasFocus)
    assert not line.isUndoAvailable()
    qtbot.keyClick(line, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert window.widget("batch").value() == 1


def test_a_dropped_scenario_is_not_saved_into_the_open_entry(
    window: MainWindow, asker: Asker, tmp_path: Path, monkeypatch
) -> None:
    entry_id = window.save_to_library(name="mine")
    assert entry_id is not None
    data = DEFAULT_SCENARIO.model_dump(mode="json")
    data["workload"]["batch"] = 12
    dropped = tmp_path / "colleague.json"
    dropped.write_text(__import__("json").dumps(data))
    window.drop_path(dropped)
    assert window.widget("batch").value() == 12 and window.library_entry_id is None
    window._ask_name = lambda _sc: "colleague's plan"  # type: ignore[method-assign]
    new_id = window.save_to_library()
    assert new_id != entry_id and batch_of(window.library.get(entry_id).scenario) == 1
    # and no export replaces the dropped file or a saved configuration
    warnings: list[str] = []
    monkeypatch.setattr("vramdesk.ui.window_actions.QMessageBox.warning", lambda _p, _t, text: warnings.append(text))
    before = dropped.read_bytes()
    with pytest.raises(OSError, match="would replace"):
        window.export_current("json", dropped)
    with pytest.raises(OSError, match="would replace"):
        window.export_current("md", window.library.get(entry_id).path)
    assert dropped.read_bytes() == before


def test_the_versions_list_reads_in_chinese(chinese, tmp_path: Path) -> None:
    from vramdesk.ui.i18n import tr
    from vramdesk.ui.versions import version_text

    library = ScenarioLibrary(tmp_path / "lib")
    entry = library.save(DEFAULT_SCENARIO, name="plan")
    library.update(entry.id, DEFAULT_SCENARIO)
    [v] = library.versions(entry.id)
    text = version_text(v)
    assert "修订 1" in text and "推理" in text and "批大小 1" in text and tr("batch") == "批大小"


def test_redo_keys_are_not_ambiguous(window: MainWindow) -> None:
    """Ctrl+Shift+Z is already the platform's redo on Linux: bound twice, Qt refused it as ambiguous."""
    keys = [k.toString() for k in window.action_redo.shortcuts()]
    assert len(keys) == len(set(keys)) and {"Ctrl+Shift+Z", "Ctrl+Y"} <= set(keys)


def test_a_generated_name_follows_the_plan_until_one_is_typed(window: MainWindow, qtbot) -> None:
    """The first start's name is generated: switching the model renames the plan (title, Save as, the current
    scenario that reports and comparisons use); a name the user typed stays."""
    window.choose_model(OTHER_MODEL)
    qtbot.waitUntil(lambda: not window.pending, timeout=5000)
    current = window.current_scenario()
    assert current is not None and current.name == "Llama-3.1-70B on an RTX 4090"
    assert window.windowTitle().startswith("Llama-3.1-70B on an RTX 4090")
    proposed: list[str | None] = []
    window._ask_name = lambda sc: proposed.append(sc.name) or "seventy"  # type: ignore[method-assign]
    entry_id = window.save_to_library()
    assert proposed == ["Llama-3.1-70B on an RTX 4090"]  # Save as proposes the plan's name, not the first start's
    assert entry_id is not None and window.library.get(entry_id).name == "seventy"
    # a typed name stays when the plan changes
    window.widget("batch").setValue(4)
    window.estimate_now()
    renamed = window.current_scenario()
    assert renamed is not None and renamed.name == "seventy" and window.windowTitle().startswith("seventy")


def test_save_change_the_model_save_again_the_generated_name_follows_and_the_versions_stay(
    window: MainWindow, asker: Asker, qtbot
) -> None:
    """The name Save as proposes is the plan's: saved under it, the entry is renamed with the plan when another
    model is saved back into it (after the question that protects a plan), and what it held stays a version."""
    window._ask_name = lambda sc: sc.name  # type: ignore[method-assign] # the user accepts the proposed name
    first = window.save_to_library()
    assert first is not None and window.library.get(first).name == "Qwen3-4B on an RTX 4090"
    window.choose_model(OTHER_MODEL)
    qtbot.waitUntil(lambda: not window.pending, timeout=5000)
    # the title follows the plan, not the entry's old name
    assert window.windowTitle().startswith("Llama-3.1-70B on an RTX 4090")
    asker.replies.append("replace")
    again = window.save_to_library()
    assert asker.asked and again is not None
    entry = window.library.get(again)
    assert entry.name == "Llama-3.1-70B on an RTX 4090" and entry.scenario.model.id == OTHER_MODEL
    assert window.windowTitle().startswith("Llama-3.1-70B on an RTX 4090")
    kept = [v.scenario.model.id for v in window.library.versions(entry.id) if v.scenario is not None]
    assert DEFAULT_SCENARIO.model.id in kept  # the Qwen plan it held is an earlier version
    assert [e.name for e in window.library.entries()] == ["Llama-3.1-70B on an RTX 4090"]  # one entry, renamed


def test_a_name_the_user_typed_stays_when_another_model_is_saved_back(window: MainWindow, asker: Asker, qtbot) -> None:
    window._ask_name = lambda sc: "my plan"  # type: ignore[method-assign]
    first = window.save_to_library()
    window.choose_model(OTHER_MODEL)
    qtbot.waitUntil(lambda: not window.pending, timeout=5000)
    assert window.windowTitle().startswith("my plan")
    asker.replies.append("replace")
    again = window.save_to_library()
    assert again == first and window.library.get(again).name == "my plan"
