"""The Which GPUs view (View menu, Ctrl+Shift+G): the command line's ``solve --advise`` as a sortable table computed
on a worker; a double-clicked row plans for that GPU and count, as one undo step."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from uiwindow import make_window, scenario_for

from vramdesk.core.advice import advise
from vramdesk.core.solve_gpus import gpu_layout
from vramdesk.services.catalog import default_catalog
from vramdesk.ui.gpu_rows import COLUMNS, MAX_GPUS, row_cells
from vramdesk.ui.gpus_view import GpusDialog
from vramdesk.ui.presenter import gib

L70 = "meta-llama/Llama-3.1-70B-Instruct"


def _open(qtbot, w) -> GpusDialog:
    w.action_gpus_view.trigger()
    dialog = w.gpus_dialog
    assert isinstance(dialog, GpusDialog) and dialog.isVisible()
    qtbot.waitUntil(lambda: not dialog.busy and dialog.model.rowCount() > 0, timeout=20_000)
    return dialog


def _column(title: str) -> int:
    return next(i for i, c in enumerate(COLUMNS) if c.title == title)


def test_the_view_lists_what_solve_advise_answers_and_sorts(qtbot) -> None:
    s = scenario_for(L70, "RTX 4090")
    w = make_window(qtbot, s)
    assert w.action_gpus_view.shortcut() == QKeySequence("Ctrl+Shift+G")
    dialog = _open(qtbot, w)
    cat = default_catalog()
    expected = advise(s, cat.facts(L70), cat.gpus(), max_gpus=MAX_GPUS)
    model = dialog.model
    # the same rows as the core's advice (the table starts sorted by the count, fewest first)
    assert [(r.gpu, r.gpus, r.verdict, r.device_bytes) for r in model.rows] == [
        (r.gpu, r.gpus, r.verdict, r.device_bytes) for r in expected
    ]
    by_name = {r.gpu: r for r in expected}
    h100 = next(i for i, r in enumerate(model.rows) if r.gpu == "H100 SXM")
    cells = [model.data(model.index(h100, c)) for c in range(model.columnCount())]
    row = by_name["H100 SXM"]
    assert cells == list(row_cells(row))
    assert cells[1] == "2" and cells[2] == "Fits" and cells[3] == gib(row.device_bytes or 0)
    assert cells[5] == f"{row.decode_tokens_per_s:,.1f} tokens/s"
    assert [model.headerData(c, Qt.Orientation.Horizontal) for c in range(len(COLUMNS))][:3] == [
        "GPU",
        "How many",
        "Verdict",
    ]
    # sorted by speed, fastest first: the fitting rows by decode speed, the ones that do not fit last
    dialog.table.sortByColumn(_column("Speed"), Qt.SortOrder.DescendingOrder)
    speeds = [r.decode_tokens_per_s for r in model.rows if r.gpus is not None]
    assert speeds == sorted(speeds, reverse=True)
    fits = [r.gpus is not None for r in model.rows]
    assert fits == sorted(fits, reverse=True) and not all(fits)
    assert model.data(model.index(len(model.rows) - 1, 1)) == f"more than {MAX_GPUS}"
    # by name
    dialog.table.sortByColumn(_column("GPU"), Qt.SortOrder.AscendingOrder)
    names = [r.gpu.lower() for r in model.rows]
    assert names == sorted(names)


def test_a_double_clicked_row_plans_for_its_gpus_and_undo_takes_it_back(qtbot) -> None:
    s = scenario_for(L70, "RTX 4090")
    w = make_window(qtbot, s)
    before = w.form.values()
    assert w.view is not None and w.view.verdict == "does not fit"
    dialog = _open(qtbot, w)
    model = dialog.model
    i = next(i for i, r in enumerate(model.rows) if r.gpu == "H100 SXM")
    row = model.rows[i]
    # a row that does not fit plans nothing
    last = len(model.rows) - 1
    assert model.rows[last].gpus is None and not dialog.apply_row(last)
    assert w.form.values() == before
    dialog.table.scrollTo(model.index(i, 0))
    rect = dialog.table.visualRect(model.index(i, 0))
    # (Qt reads a double click as a press, a release and a second press: the click first)
    qtbot.mouseClick(dialog.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert dialog.apply_button.isEnabled()
    qtbot.mouseDClick(dialog.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    ev = w.evaluation
    assert ev is not None and ev.scenario is not None and ev.view is not None
    assert ev.scenario.hardware.gpu == "H100 SXM" and ev.scenario.hardware.gpu_count == row.gpus
    planned, _ = gpu_layout(s.model_copy(update={"hardware": s.hardware.model_copy(update={"gpu": "H100 SXM"})}), 2)
    assert ev.scenario.parallelism == planned.parallelism
    assert ev.view.verdict == row.verdict == "fits" and ev.view.device_bytes == row.device_bytes
    assert w.undo_stack.undoText() == f"Plan for {row.gpus} x H100 SXM"
    w.undo_stack.undo()
    assert w.form.values() == before
    assert w.evaluation is not None and w.evaluation.view is not None
    assert w.evaluation.view.verdict == "does not fit"


def test_the_view_in_chinese(qtbot, chinese) -> None:
    w = make_window(qtbot, scenario_for(L70, "RTX 4090"))
    dialog = _open(qtbot, w)
    assert dialog.windowTitle() == "哪些 GPU 放得下"
    model = dialog.model
    assert model.headerData(1, Qt.Orientation.Horizontal) == "数量"
    h100 = next(i for i, r in enumerate(model.rows) if r.gpu == "H100 SXM")
    assert model.data(model.index(h100, 2)) == "可以运行"
    assert "token/秒" in model.data(model.index(h100, 5))
    assert "种 GPU 中有" in dialog.status.text()
