"""The comparison window with three saved plans, driven with pytest-qt: the verdict and the totals first, inputs
grouped under human labels, only the differences at first, columns dragged and removed, the unit setting, the
chart's names, and the comparison exported in all seven formats, each opened back. Qt runs offscreen."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PySide6.QtGui import QColor, QFontMetrics, QImage
from pytestqt.qtbot import QtBot
from samples import named_plan

from vramdesk.storage.library import ScenarioLibrary
from vramdesk.ui import i18n, qtapp, theme
from vramdesk.ui.compare import LibraryWindow
from vramdesk.ui.compare_chart import wrap_name
from vramdesk.ui.compare_export import COMPARE_FORMATS
from vramdesk.ui.presenter import set_unit, unit_name

CJK = re.compile(r"[\u4e00-\u9fff]")
NAMES = ("bf16 baseline", "int4 weights", "batch 8")


variant = named_plan


@pytest.fixture
def win(qtbot: QtBot, tmp_path: Path) -> Iterator[LibraryWindow]:
    qtapp.ensure_app()
    lib = ScenarioLibrary(tmp_path / "lib")
    ids = [
        lib.save(variant(NAMES[0])).id,
        lib.save(variant(NAMES[1], weights="int4")).id,
        lib.save(variant(NAMES[2], batch=8, output_len=2048)).id,
    ]
    w = LibraryWindow(lib)
    qtbot.addWidget(w)
    w.show()
    w.set_checked(ids)
    w.update_comparison()
    assert w.comparison is not None
    before = unit_name()
    yield w
    set_unit(before)


def heads(w: LibraryWindow) -> dict[str, int]:
    """Row name -> row (the first of that name), hidden rows too."""
    out: dict[str, int] = {}
    for n in range(w.table.rowCount()):
        item = w.table.item(n, 0)
        if item is not None:
            out.setdefault(item.text(), n)
    return out


def column(w: LibraryWindow, name: str) -> int:
    return 1 + list(w.comparison.labels).index(name)  # type: ignore[union-attr]


def test_the_verdict_and_the_totals_come_first_with_the_verdict_coloured(win: LibraryWindow) -> None:
    shown = win.table.shown_rows()
    assert shown[:3] == ["Fit on the GPU", "GPU", "Verdict"]
    assert shown.index("Totals (GiB)") < shown.index("Components at the peak (GiB)") < shown.index("Model")
    row = heads(win)["Verdict"]
    for col in range(1, 4):
        item = win.table.item(row, col)
        assert item.text() == "fits" and item.foreground().color() == QColor(theme.VERDICT_COLORS["fits"])
        assert item.font().bold()


def test_inputs_are_grouped_under_human_labels(win: LibraryWindow) -> None:
    win.only_differences.setChecked(False)
    shown = win.table.shown_rows()
    groups = [shown.index(g) for g in ("Model", "Workload", "Hardware", "Engine")]
    assert groups == sorted(groups)
    assert {"Model ID", "Weights", "Batch", "Output tokens", "GPU count", "Engine"} <= set(shown)
    # no dotted field paths, no field names
    assert not [t for t in shown if re.search(r"\w\.\w|_", t)], shown


def test_only_differences_is_on_at_first_and_hides_what_every_plan_shares(win: LibraryWindow) -> None:
    assert win.only_differences.isChecked()
    shown = win.table.shown_rows()
    assert {"Weights", "Batch", "Output tokens"} <= set(shown)
    assert "Model ID" not in shown and "GPU count" not in shown
    assert "Hardware" not in shown and "Engine" not in shown  # groups with no difference lose their title
    assert "Peak reserved" in shown  # the totals always show
    win.only_differences.setChecked(False)
    shown = win.table.shown_rows()
    assert {"Model ID", "GPU count", "Hardware", "Engine"} <= set(shown)
    win.only_differences.setChecked(True)
    assert "Model ID" not in win.table.shown_rows()
    # the differences are highlighted, equal rows are not
    highlighted = {r for r, _ in win.highlighted_cells()}
    assert heads(win)["Weights"] in highlighted and heads(win)["Model ID"] not in highlighted


def test_a_column_dragged_elsewhere_is_the_order_of_the_chart_and_the_exports(
    qtbot: QtBot, win: LibraryWindow, tmp_path: Path
) -> None:
    before = list(win.comparison.labels)  # type: ignore[union-attr]
    header = win.table.horizontalHeader()
    header.moveSection(1, 3)  # the first plan to the end
    want = [*before[1:], before[0]]
    qtbot.waitUntil(lambda: list(win.comparison.labels) == want)  # type: ignore[union-attr]
    assert [win.table.horizontalHeaderItem(c).text() for c in range(1, 4)] == want
    assert win.chart.labels == want
    md = win.export(tmp_path / "order.md").read_text(encoding="utf-8")
    assert f"|  | {' | '.join(want)} |" in md
    rows = list(csv.reader(io.StringIO(win.export(tmp_path / "order.csv").read_text(encoding="utf-8"))))
    assert rows[0][6:] == want
    # the names' column stays first
    header.moveSection(2, 0)
    assert header.visualIndex(0) == 0
    # the order holds when the comparison is made again (a file changed, the current work moved)
    win.update_comparison()
    assert list(win.comparison.labels) == [header.model().headerData(c, header.orientation()) for c in (1, 2, 3)]  # type: ignore[union-attr]


def test_remove_from_comparison_unticks_the_plan(win: LibraryWindow) -> None:
    gone = win.comparison.labels[1]  # type: ignore[union-attr]
    menu = win.table.horizontalHeader().contextMenuPolicy()
    assert menu.name == "CustomContextMenu"
    [action] = win.header_menu(1).actions()
    assert action.text() == f"Remove from comparison: {gone}"
    action.trigger()
    win.update_comparison()
    assert win.comparison is not None and gone not in win.comparison.labels and len(win.comparison.labels) == 2
    assert len(win.checked_ids()) == 2 and win.table.columnCount() == 3
    win.header_menu(0).actions()[0].trigger()
    win.update_comparison()
    assert win.comparison is None and "Tick 2 to 6" in win.status.text()


def test_the_unit_setting_is_what_the_table_and_the_exports_show(win: LibraryWindow, tmp_path: Path) -> None:
    set_unit("GB")
    win.update_comparison()
    assert {"Totals (GB)", "Components at the peak (GB)"} <= set(win.table.shown_rows())
    cmp = win.comparison
    assert cmp is not None
    dev = next(r for r in cmp.rows if r.name == "on the device (per GPU)")
    col = column(win, NAMES[1])
    assert win.table.item(heads(win)["On the device (per GPU)"], col).text() == f"{dev.values[col - 1] / 1e9:.2f}"
    md = win.export(tmp_path / "gb.md").read_text(encoding="utf-8")
    assert "## Totals (GB)" in md and "(GiB)" not in md
    assert win.chart.getPlotItem().getAxis("left").labelText == "GB"


def test_the_chart_names_the_plans_under_their_bars(win: LibraryWindow) -> None:
    assert win.chart.labels == list(win.comparison.labels)  # type: ignore[union-attr]
    assert win.chart.tick_texts() == list(win.comparison.labels)  # short names: whole, on one line
    assert all(t.endswith("fits") for t in win.chart.bar_texts)
    legend = [name for name, _ in win.legend.entries]
    assert legend[:2] == ["weights", "KV cache"] and legend[-1] == "GPU memory (dashed line)"
    metrics = QFontMetrics(win.chart.font())
    long = "Qwen3-4B with int4 weights and a very long name that cannot fit under its bar at all"
    wrapped = wrap_name(long, metrics, 120)
    lines = wrapped.split("\n")
    assert len(lines) == 2 and lines[0] == long[: len(lines[0])] and lines[1].endswith("…")
    assert all(metrics.horizontalAdvance(line) <= 120 for line in lines)
    assert wrap_name("量化权重方案与长输出对比测试", metrics, 60).count("\n") == 1  # no spaces: broken anywhere


class Html(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.tags: list[str] = []
        self.imgs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "img":
            self.imgs.append(dict(attrs).get("src") or "")
        elif tag not in ("meta", "br"):
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, (self.stack, tag)
        self.stack.pop()


def _check_pdf(path: Path) -> None:
    data = path.read_bytes()
    if importlib.util.find_spec("PySide6.QtPdf") is not None:
        from PySide6.QtPdf import QPdfDocument

        doc = QPdfDocument()
        assert doc.load(str(path)) == QPdfDocument.Error.None_ and doc.pageCount() == 1
        return
    assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF")
    assert len(re.findall(rb"/Type\s*/Page(?![s\w])", data)) == 1


def test_all_seven_formats_open_back_in_the_print_palette(win: LibraryWindow, tmp_path: Path) -> None:
    """Also the bug "exporting a comparison as PNG or HTML crashes (TypeError while rendering the chart)"."""
    before = theme.current()
    theme.use_palette(theme.DARK)
    try:
        out = {fmt: win.export(tmp_path / f"cmp.{fmt}") for fmt in COMPARE_FORMATS}
    finally:
        theme.use_palette(before)
    labels = list(win.comparison.labels)  # type: ignore[union-attr]

    png = QImage(str(out["png"]))
    assert not png.isNull() and png.width() > 1000
    assert png.pixelColor(4, 4) == QColor(theme.PRINT.background)  # light paper, though the window is dark
    colors = {png.pixel(x, y) for x in range(0, png.width(), 17) for y in range(0, png.height(), 17)}
    assert QColor(theme.CATEGORY_COLORS["weights"]).rgb() in colors

    root = ET.parse(out["svg"]).getroot()
    texts = ["".join(e.itertext()).replace("\xa0", " ").strip() for e in root.iter() if e.tag.endswith("text")]
    assert "Comparison of 3 plans" in texts and all(name in texts for name in labels)

    _check_pdf(out["pdf"])

    page = out["html"].read_text(encoding="utf-8")
    p = Html()
    p.feed(page)
    assert not p.stack and "table" in p.tags and len(p.imgs) == 1 and p.imgs[0].startswith("data:image/png;base64,")
    assert page.index("Fit on the GPU") < page.index("<img") < page.index("Totals (GiB)")
    assert QImage.fromData(__import__("base64").b64decode(p.imgs[0].split(",", 1)[1])).width() > 1000

    md = out["md"].read_text(encoding="utf-8").splitlines()
    assert md[0] == "# vramdesk comparison of 3 plans"
    table = [ln for ln in md if ln.startswith("| ")]
    assert f"|  | {' | '.join(labels)} |" in table and "| Verdict | fits | fits | fits |" in table
    assert any(ln.startswith("| **Batch** |") for ln in table)

    rows = list(csv.DictReader(io.StringIO(out["csv"].read_text(encoding="utf-8"))))
    dev = next(r for r in rows if r["name"] == "on the device (per GPU)")
    items = {i.label: i for i in win.items}
    assert all(int(dev[name]) == items[name].est.device_bytes for name in labels)  # type: ignore[union-attr]
    assert "model.id" not in {r["name"] for r in rows}  # only the differences, as the window shows them

    doc = json.loads(out["json"].read_text(encoding="utf-8"))
    assert doc["columns"] == labels and doc["only_differences"] is True and doc["unit"] == "GiB"


def test_the_window_in_chinese_translates_every_label(qtbot: QtBot, tmp_path: Path) -> None:
    i18n.set_language("zh_CN")
    try:
        lib = ScenarioLibrary(tmp_path / "zh")
        ids = [lib.save(variant("a")).id, lib.save(variant("b", weights="int4", batch=4)).id]
        w = LibraryWindow(lib)
        qtbot.addWidget(w)
        w.set_checked(ids)
        w.update_comparison()
        w.only_differences.setChecked(False)
        shown = w.table.shown_rows()
        data = {"GPU", "KV 缓存", "cuBLAS 工作区"}  # names that stay as they are written
        assert not [t for t in shown if not CJK.search(t) and t not in data], shown
        assert w.only_differences.text() == "仅显示差异"
        assert w.header_menu(0).actions()[0].text().startswith("从比较中移除")
    finally:
        i18n.set_language("en")
