"""The fit map (View menu, Ctrl+Shift+M): the plan swept over two settings on a worker, drawn as a heat map with
the GPU's boundary; hover tells a square's numbers, a click plans with it (one undo step), and it exports as
PNG / SVG / CSV."""

from __future__ import annotations

import csv
import xml.etree.ElementTree as ET
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QImage, QKeySequence
from uiwindow import make_window, scenario_for

from vramdesk.core.estimate import estimate
from vramdesk.services.catalog import default_catalog
from vramdesk.ui import theme
from vramdesk.ui.fit_map_view import FitMapDialog
from vramdesk.ui.presenter import gib

L8 = "meta-llama/Llama-3.1-8B-Instruct"


def _open(qtbot, w) -> FitMapDialog:
    w.action_fit_map.trigger()
    dialog = w.findChild(FitMapDialog, "fitMapView")
    assert isinstance(dialog, FitMapDialog) and dialog.isVisible()
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: not dialog.busy and dialog.fit_map is not None, timeout=20_000)
    return dialog


def _cell(m, verdict: str) -> tuple[int, int]:
    return next((i, j) for i, col in enumerate(m.cells) for j, c in enumerate(col) if c.cell.verdict == verdict)


def test_the_map_of_input_tokens_by_batch_for_the_plan(qtbot) -> None:
    w = make_window(qtbot, scenario_for(L8, "RTX 4090", input_len=4096))
    assert w.action_fit_map.shortcut() == QKeySequence("Ctrl+Shift+M")
    dialog = _open(qtbot, w)
    m = dialog.fit_map
    assert m is not None
    assert (m.x.name, m.y.name) == ("input_len", "batch")
    assert m.x_ticks == ("512", "1k", "2k", "4k", "8k", "16k", "32k", "64k")
    assert m.y_ticks == ("1", "2", "4", "8", "16", "32", "64", "128")
    fits, short = _cell(m, "fits"), _cell(m, "does not fit")
    assert m.cell(*fits).color != m.cell(*short).color
    assert m.boundary  # the line between them
    # the square's numbers are the estimate's, in its tooltip under the mouse
    cell = m.cell(3, 2).cell
    assert cell.values == (4096, 4)
    cat = default_catalog()
    direct = estimate(scenario_for(L8, "RTX 4090", input_len=4096, batch=4), cat.facts(L8), cat.gpu("RTX 4090"))
    assert direct.fit is not None and cell.required_bytes == direct.fit.required_bytes
    heat = dialog.heat
    tip = heat.tooltip_at(heat.cell_rect(3, 2).center())
    assert tip.startswith("Input tokens 4k · Batch 4\n")
    assert f"Needs {gib(direct.fit.required_bytes)} per GPU of the RTX 4090's" in tip
    assert heat.tooltip_at(heat.cell_rect(*short).center()).count("short") == 1
    runs = sum(1 for col in m.cells for c in col if c.runs)
    assert 0 < runs < 64 and dialog.status.text() == f"{runs} of 64 combinations run on the GPU."


def test_a_clicked_square_is_the_plan_and_ctrl_z_takes_it_back(qtbot) -> None:
    w = make_window(qtbot, scenario_for(L8, "RTX 4090", input_len=4096))
    before = w.form.values()
    dialog = _open(qtbot, w)
    heat = dialog.heat
    qtbot.mouseClick(heat, Qt.MouseButton.LeftButton, pos=heat.cell_rect(1, 3).center().toPoint())
    ev = w.evaluation
    assert ev is not None and ev.scenario is not None
    assert (ev.scenario.workload.input_len, ev.scenario.workload.batch) == (1024, 8)
    assert w.undo_stack.undoText() == "Fit map: Input tokens 1k, Batch 8"
    # Ctrl+Z in the map (the window's undo is one of its actions too)
    dialog.activateWindow()
    dialog.setFocus()
    qtbot.keyClick(dialog, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert w.form.values() == before
    qtbot.mouseClick(heat, Qt.MouseButton.LeftButton, pos=heat.cell_rect(0, 0).center().toPoint())
    assert w.evaluation is not None and w.evaluation.scenario is not None
    assert w.evaluation.scenario.workload.input_len == 512
    w.activateWindow()
    w.setFocus()
    qtbot.keyClick(w, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert w.form.values() == before


def test_exports_png_svg_csv(qtbot, tmp_path: Path) -> None:
    theme.use_palette(theme.DARK)  # the window in its dark theme: the export is still on paper
    try:
        w = make_window(qtbot, scenario_for(L8, "RTX 4090", input_len=4096))
        dialog = _open(qtbot, w)
        png, svg, table = (dialog.export(tmp_path / f"map.{s}") for s in ("png", "svg", "csv"))
    finally:
        theme.use_palette(theme.LIGHT)
    image = QImage(str(png))
    assert (image.width(), image.height()) == (2400, 1280)
    assert image.pixelColor(4, 4) == QColor(theme.PRINT.background)
    # a red square somewhere in the middle (a plan that does not fit is drawn)
    reds = [image.pixelColor(x, 640) for x in range(300, 2300, 50)]
    assert any(c.red() > 150 and c.green() < 110 for c in reds)
    texts = [t.text or "" for t in ET.parse(svg).getroot().iter("{http://www.w3.org/2000/svg}text")]
    joined = " ".join(" ".join(t.split()) for t in texts)
    assert "Fit map:" in joined and "Input tokens" in joined and "Batch" in joined
    assert "64k" in texts and "128" in texts and "Does not fit" in joined
    rows = list(csv.DictReader(table.read_text(encoding="utf-8").splitlines()))
    assert len(rows) == 64 and rows[0]["input_len"] == "512" and rows[0]["batch"] == "1"
    assert {r["verdict"] for r in rows} == {"fits", "tight", "does not fit"}


def test_fine_tuning_starts_with_sequence_by_micro_batch_and_errors_show(qtbot) -> None:
    s = scenario_for(L8, "H100 SXM").model_copy(deep=True)
    data = s.model_dump(mode="json")
    data["workload"] = {"kind": "finetune", "method": "lora", "seq_len": 2048}
    from vramdesk.core.scenario import Scenario

    w = make_window(qtbot, Scenario.model_validate(data))
    dialog = _open(qtbot, w)
    assert dialog.fit_map is not None
    assert (dialog.fit_map.x.name, dialog.fit_map.y.name) == ("seq_len", "micro_batch")
    dialog.y_edit.setText("0,1")
    dialog.compute()
    qtbot.waitUntil(lambda: not dialog.busy, timeout=20_000)
    assert dialog.status.text() == "axis micro_batch: 0 is less than 1"
    assert dialog.fit_map is None and not dialog.export_button.isEnabled()


def test_the_map_in_chinese(qtbot, chinese) -> None:
    w = make_window(qtbot, scenario_for(L8, "RTX 4090", input_len=4096))
    dialog = _open(qtbot, w)
    assert dialog.windowTitle() == "适配图"
    assert dialog.fit_map is not None and dialog.fit_map.x_title == "输入 token"
    heat = dialog.heat
    assert "每块 GPU 需要" in heat.tooltip_at(heat.cell_rect(0, 0).center())
    assert "种组合中有" in dialog.status.text()
    dialog.y_edit.setText("0")
    dialog.compute()
    qtbot.waitUntil(lambda: not dialog.busy, timeout=20_000)
    assert dialog.status.text() == "坐标轴 batch：0 小于 1"
