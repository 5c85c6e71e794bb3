"""The window's exports cannot hurt either: no export replaces a library configuration or the scenario it was
made from, and the comparison copied as TSV has no cell a spreadsheet would run. Qt runs offscreen."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from PySide6.QtWidgets import QFileDialog, QMessageBox
from pytestqt.qtbot import QtBot

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.scenario import Scenario
from vramdesk.safety import OutputIsInputError
from vramdesk.storage.library import ScenarioLibrary
from vramdesk.storage.scenarios import save_scenario
from vramdesk.ui import app as ui_app
from vramdesk.ui import export as ex
from vramdesk.ui import qtapp
from vramdesk.ui.compare import LibraryWindow
from vramdesk.ui.presenter import evaluate_scenario


def _variant(batch: int) -> Scenario:
    data = DEFAULT_SCENARIO.model_dump()
    data["workload"]["batch"] = batch
    return Scenario.model_validate(data)


@pytest.fixture
def library_window(qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LibraryWindow:
    qtapp.ensure_app()
    lib = ScenarioLibrary(tmp_path / "lib")
    lib.save(DEFAULT_SCENARIO, name="=cmd|' /C calc'!A0")
    lib.save(_variant(2), name="@SUM(A1)")
    win = LibraryWindow(lib)
    qtbot.addWidget(win)
    win.reload()
    win.set_checked([e.id for e in win.entries])
    win.update_comparison()
    warnings: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", lambda _parent, _title, text: warnings.append(text))
    win.warnings = warnings  # type: ignore[attr-defined]
    return win


def test_comparison_exports_never_replace_a_library_file(
    library_window: LibraryWindow, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    win = library_window
    entry = win.entries[0]
    before = entry.path.read_bytes()
    for suffix in ("md", "csv", "html", "png"):
        # the same file under another name: a link next to it, with the format's suffix
        link = tmp_path / f"entry.{suffix}"
        link.symlink_to(entry.path)
        for target in (entry.path, link):
            with pytest.raises(OutputIsInputError, match="would replace a configuration in the library"):
                win.export(target)
        link.unlink()
    # through the dialog: a message, no exception out of the slot, nothing written
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(entry.path), ""))
    win.export_dialog()
    assert len(win.warnings) == 1 and "choose another file" in win.warnings[0]  # type: ignore[attr-defined]
    # "Export file…" of one entry over another entry's file
    win.select(win.entries[1].id)
    win.export_selected(entry.path)
    assert len(win.warnings) == 2  # type: ignore[attr-defined]
    assert entry.path.read_bytes() == before
    assert win.export(tmp_path / "c.md") == tmp_path / "c.md"  # another file is fine


def test_comparison_tsv_copy_has_no_formulas(library_window: LibraryWindow) -> None:
    rows = list(csv.reader(io.StringIO(library_window.table_text("tsv"), newline=""), delimiter="\t"))
    assert set(rows[0][1:]) == {"'=cmd|' /C calc'!A0", "'@SUM(A1)"}
    assert all(not c.startswith(("=", "+", "@", "\t", "\r")) for r in rows for c in r)
    csv_rows = list(csv.reader(io.StringIO(library_window.table_text("csv"))))
    assert set(csv_rows[0][6:]) == {"'=cmd|' /C calc'!A0", "'@SUM(A1)"}


@pytest.mark.parametrize("fmt", ex.VIEW_FORMATS)
def test_export_view_refuses_to_write_over_its_input(qtbot: QtBot, tmp_path: Path, fmt: str) -> None:
    qtapp.ensure_app()
    s = tmp_path / "s.vramdesk.json"
    save_scenario(DEFAULT_SCENARIO, s)
    before = s.read_bytes()
    view = evaluate_scenario(DEFAULT_SCENARIO).view
    assert view is not None
    with pytest.raises(OutputIsInputError, match=r"s\.vramdesk\.json: the output would replace the input scenario"):
        ex.export_view(view, DEFAULT_SCENARIO, fmt, s, inputs=[tmp_path / "." / s.name])
    assert s.read_bytes() == before
    out = tmp_path / f"x.{fmt}"
    assert ex.export_view(view, DEFAULT_SCENARIO, fmt, out, inputs=[s]) == out and out.is_file()


def test_tracebacks_in_the_log_and_on_stderr_carry_no_password(tmp_path: Path, capsys, monkeypatch) -> None:
    """An unexpected error whose chained cause quotes a Hub URL with credentials (as httpx errors do)."""
    import logging
    import sys

    monkeypatch.setattr(ui_app, "offscreen", lambda: True)  # no dialog in the test
    handler = logging.FileHandler(tmp_path / "vramdesk.log", encoding="utf-8")
    handler.setFormatter(ui_app._RedactingFormatter("%(levelname)s %(message)s"))
    ui_app.LOG.addHandler(handler)
    old_hook = sys.excepthook
    try:
        ui_app.install_excepthook(tmp_path / "vramdesk.log")
        try:
            try:
                raise ConnectionError("GET http://alice:s3cret@hub.local/api/models?token=abc123 failed")
            except ConnectionError as cause:
                raise RuntimeError("search failed") from cause
        except RuntimeError as err:
            sys.excepthook(type(err), err, err.__traceback__)
    finally:
        sys.excepthook = old_hook
        ui_app.LOG.removeHandler(handler)
        handler.close()
    logged = (tmp_path / "vramdesk.log").read_text(encoding="utf-8")
    printed = capsys.readouterr().err
    for text in (logged, printed):
        assert "hub.local" in text and "s3cret" not in text and "abc123" not in text
