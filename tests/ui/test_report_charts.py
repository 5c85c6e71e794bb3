"""Charts fit for a report (issue 21): every exported chart has its title, subtitle, legend, unit and source line,
is drawn for print (dark on white) from a dark window unless the screen's theme is kept, keeps its text as text in
SVG; the PDF report paginates under the plan's name; `vramdesk export` takes the format from the suffix and says
what it wrote. Every file is opened back: pixels read, SVG parsed and rendered, PDF pages and title read."""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtGui import QColor, QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer
from PySide6.QtWidgets import QApplication

from vramdesk.cli_export import pdf_pages
from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.scenario import Scenario
from vramdesk.report.captions import caption
from vramdesk.report.tables import ReportData
from vramdesk.storage.library import ScenarioLibrary
from vramdesk.storage.scenarios import save_scenario
from vramdesk.ui import export as ex
from vramdesk.ui import i18n, qtapp, theme
from vramdesk.ui.core_text import localize, localize_name
from vramdesk.ui.estimate_figure import SIZES, estimate_figure, units_text
from vramdesk.ui.figure import qt_palette
from vramdesk.ui.main_window import MainWindow
from vramdesk.ui.presenter import EstimateView, evaluate_scenario
from vramdesk.ui.report_export import export_report_pdf
from vramdesk.ui.results_view import legend_entries

SVG = "{http://www.w3.org/2000/svg}"
#: (chart, breakdown mode) of every kind of chart picture
KINDS = [("both", "bar"), ("breakdown", "pie"), ("breakdown", "bar"), ("phase", "bar")]
WHITE = QColor(theme.PRINT.background).rgb() & 0xFFFFFF
DARK_BG = QColor(theme.DARK.background).rgb() & 0xFFFFFF
DARK_PANEL = QColor(theme.DARK.panel).rgb() & 0xFFFFFF


@pytest.fixture
def dark() -> Iterator[None]:
    """A dark window: the palette of the window's theme and the application's Qt palette both dark (labels that
    only inherit a colour would come out light); both as they were afterwards."""
    app = qtapp.ensure_app()
    before, before_qt = theme.current(), QApplication.palette()
    theme.use_palette(theme.DARK)
    app.setPalette(qt_palette(theme.DARK))
    try:
        yield
    finally:
        theme.use_palette(before)
        app.setPalette(before_qt)


@pytest.fixture(scope="module")
def view() -> EstimateView:
    qtapp.ensure_app()
    ev = evaluate_scenario(DEFAULT_SCENARIO)
    assert ev.view is not None
    return ev.view


def rgb(image: QImage, x: int, y: int) -> int:
    return image.pixel(x, y) & 0xFFFFFF


def lightness(image: QImage, x: int, y: int) -> int:
    return QColor(image.pixel(x, y)).lightness()


def dark_pixels(image: QImage, top: int, bottom: int, right: int) -> int:
    return sum(lightness(image, x, y) < 90 for y in range(top, bottom, 2) for x in range(0, right, 2))


def svg_texts(path: Path) -> list[str]:
    root = ET.parse(path).getroot()
    return [" ".join("".join(e.itertext()).split()) for e in root.iter(f"{SVG}text")]


def not_blank(image: QImage) -> bool:
    small = image.scaled(64, 32)
    return len({small.pixel(x, y) for x in range(small.width()) for y in range(small.height())}) > 4


def pdf_title(data: bytes) -> str:
    """The document title of a PDF Qt wrote: a literal string (escapes undone), UTF-16 with its byte order mark."""
    m = re.search(rb"/Title\s*\(((?:[^()\\]|\\.)*)\)", data, re.DOTALL)
    assert m, "the PDF has no /Title"
    raw = re.sub(
        rb"\\([0-7]{1,3}|.)",
        lambda e: bytes([int(e.group(1), 8)]) if e.group(1).isdigit() else e.group(1),
        m.group(1),
        flags=re.DOTALL,
    )
    return raw[2:].decode("utf-16-be") if raw.startswith(b"\xfe\xff") else raw.decode("latin-1")


def expected_texts(view: EstimateView, chart: str) -> list[str]:
    """What the figure of ``view`` must say: title, subtitle, each legend entry, unit, source line (no date)."""
    c = caption(DEFAULT_SCENARIO)
    legend = (
        [localize_name(s.name) for s in view.slices] if chart == "breakdown" else [n for n, _ in legend_entries(view)]
    )
    return [localize(c.title), localize(c.subtitle), *legend, units_text()]


# ---------------------------------------------------------------------------------------------- pictures


@pytest.mark.parametrize(("chart", "mode"), KINDS)
def test_a_dark_window_exports_print_charts_with_their_texts(
    qtbot, dark, view, tmp_path: Path, chart: str, mode: str
) -> None:
    png, svg, pdf = (tmp_path / f"c.{s}" for s in ("png", "svg", "pdf"))
    ex.export_view(view, DEFAULT_SCENARIO, "png", png, chart=chart, mode=mode)
    ex.export_view(view, DEFAULT_SCENARIO, "svg", svg, chart=chart, mode=mode)
    ex.export_view(view, DEFAULT_SCENARIO, "chart-pdf", pdf, chart=chart, mode=mode)

    image = QImage(str(png))
    w, h = SIZES[chart]
    assert (image.width(), image.height()) == (2 * w, 2 * h)
    corners = [(2, 2), (image.width() - 3, 2), (2, image.height() - 3), (image.width() - 3, image.height() - 3)]
    assert all(rgb(image, x, y) == WHITE for x, y in corners)
    # nothing of the dark palette anywhere (the plots' backgrounds, the pie's hole and slice borders)
    dark_bg = [(x, y) for y in range(0, image.height(), 3) for x in range(0, image.width(), 3)]
    assert not [p for p in dark_bg if rgb(image, *p) in (DARK_BG, DARK_PANEL)]
    assert dark_pixels(image, 2 * 12, 2 * 36, image.width() // 2) > 200  # the title: dark text on white

    texts = svg_texts(svg)
    joined = " | ".join(texts)
    for text in expected_texts(view, chart):
        assert text in texts, (text, joined)
    assert any(t.startswith("vramdesk ") and " · " in t for t in texts)  # the source line
    assert "Pie" not in texts and "Bar" not in texts  # no mode buttons in a picture
    root = ET.parse(svg).getroot()
    assert root.find(f"{SVG}title") is not None and root.find(f"{SVG}title").text == DEFAULT_SCENARIO.name
    assert not list(root.iter(f"{SVG}image")), "a raster image in the SVG"
    renderer = QSvgRenderer(str(svg))
    assert renderer.isValid()
    drawn = QImage(renderer.viewBox().size(), QImage.Format.Format_ARGB32)
    drawn.fill(QColor("black"))
    painter = QPainter(drawn)
    renderer.render(painter)
    painter.end()
    assert not_blank(drawn) and rgb(drawn, 3, 3) == WHITE

    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-") and pdf_pages(data) == 1
    assert pdf_title(data) == DEFAULT_SCENARIO.name


def test_keeping_the_screen_theme_keeps_the_dark_background(qtbot, dark, view, tmp_path: Path) -> None:
    ex.export_view(view, DEFAULT_SCENARIO, "png", tmp_path / "d.png", keep_screen=True)
    image = QImage(str(tmp_path / "d.png"))
    assert rgb(image, 2, 2) == DARK_BG and rgb(image, image.width() - 3, image.height() - 3) == DARK_BG
    # the title is light text on the dark background
    light = sum(lightness(image, x, y) > 180 for y in range(24, 72, 2) for x in range(0, image.width() // 2, 2))
    assert light > 200
    with theme.printing(keep_screen=True):
        fig = estimate_figure(view, DEFAULT_SCENARIO, chart="phase")
    try:
        assert fig.palette_name == "dark"
    finally:
        fig.close()
        fig.deleteLater()
    assert theme.current() is theme.DARK  # printing() gave the window's palette back


def test_the_report_embeds_a_printed_figure_even_when_the_screen_theme_is_kept(
    qtbot, dark, view, tmp_path: Path
) -> None:
    out = ex.export_view(view, DEFAULT_SCENARIO, "html", tmp_path / "r.html", keep_screen=True)
    html = out.read_text(encoding="utf-8")
    assert f"<title>vramdesk report: {DEFAULT_SCENARIO.name}</title>" in html
    data = base64.b64decode(re.search(r'src="data:image/png;base64,([^"]+)"', html).group(1))
    image = QImage.fromData(data)
    assert not image.isNull() and rgb(image, 2, 2) == WHITE
    assert dark_pixels(image, 24, 72, image.width() // 2) > 100


def _long_plan() -> Scenario:
    """A fine-tuning plan split over 8 GPUs: many components, phases, per-GPU rows and notes."""
    data = DEFAULT_SCENARIO.model_dump(mode="json")
    data.update(
        name="Qwen3-8B full fine-tune, 4k seq on 8 x H100 SXM",
        model={"id": "Qwen/Qwen3-8B"},
        workload={"kind": "finetune", "method": "full", "seq_len": 4096, "micro_batch": 2},
        hardware={"gpu": "H100 SXM", "gpu_count": 8},
        parallelism={"pp": 2, "tp": 2},
    )
    return Scenario.model_validate(data)


def test_the_report_pdf_of_a_long_plan_spans_pages_under_its_name(qtbot, dark, tmp_path: Path) -> None:
    scenario = _long_plan()
    view, perf = ex.prepare(scenario)
    data = ReportData(view.estimate, scenario, perf)
    assert len(view.estimate.components) >= 6 and len(data.input_rows()) > 20
    out = ex.export_view(view, scenario, "pdf", tmp_path / "long.pdf", perf=perf)
    pdf = out.read_bytes()
    assert pdf.startswith(b"%PDF-") and pdf.rstrip().endswith(b"%%EOF")
    assert pdf_pages(pdf) > 1
    assert pdf_title(pdf) == scenario.name
    # without the chart and most sections it is shorter: the page count follows the content
    short = export_report_pdf(ReportData(view.estimate, scenario, None), tmp_path / "short.pdf")
    assert 1 <= pdf_pages(short.read_bytes()) <= pdf_pages(pdf)


# ---------------------------------------------------------------------------------------------- the window


@pytest.fixture
def window(qtbot, tmp_path: Path) -> MainWindow:
    qtapp.ensure_app()
    w = MainWindow(
        DEFAULT_SCENARIO, hub_search=None, detect=None, library=ScenarioLibrary(tmp_path / "lib"), autosave=False
    )
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    return w


def test_the_windows_export_options_choose_the_chart_and_the_theme(window: MainWindow, dark, tmp_path: Path) -> None:
    assert not window.action_keep_screen_theme.isChecked() and window.export_chart() == "both"
    printed = QImage(str(window.export_current("png", tmp_path / "p.png")))
    assert rgb(printed, 2, 2) == WHITE and printed.width() == 2 * SIZES["both"][0]

    window.action_keep_screen_theme.setChecked(True)
    window.export_chart_actions["phase"].trigger()
    assert QSettings().value("export/chart") == "phase"
    assert window.export_keeps_screen_theme()  # saved with the settings
    screen = QImage(str(window.export_current("png", tmp_path / "s.png")))
    assert rgb(screen, 2, 2) == DARK_BG and screen.width() == 2 * SIZES["phase"][0]

    window.copy_chart()
    copied = QGuiApplication.clipboard().image()
    assert not copied.isNull() and rgb(copied, 2, 2) == DARK_BG
    window.action_keep_screen_theme.setChecked(False)
    window.copy_chart()
    assert rgb(QGuiApplication.clipboard().image(), 2, 2) == WHITE


def test_a_chinese_window_exports_its_figure_in_chinese(qtbot, chinese, dark, view, tmp_path: Path) -> None:
    out = ex.export_view(view, DEFAULT_SCENARIO, "svg", tmp_path / "zh.svg", chart="breakdown", mode="pie")
    # Qt writes a run of Chinese and one of Latin letters as separate <text> elements: read them in order
    root = ET.parse(out).getroot()
    said = "".join("".join(e.itertext()) for e in root.iter(f"{SVG}text"))
    subtitle = localize(caption(DEFAULT_SCENARIO).subtitle)
    assert "检查点原始权重" in subtitle and subtitle in said
    assert "显存单位：GiB（2^30 字节）" in said
    assert localize_name("weights") != "weights" and localize_name("weights") in svg_texts(out)
    assert i18n.language() == "zh_CN"


# ---------------------------------------------------------------------------------------------- the command line


def _cli(*args: str, cwd: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    """`vramdesk export ...` as a user runs it, with its own temporary folder (to see nothing is left there)."""
    env = dict(os.environ, TMPDIR=str(tmp), TEMP=str(tmp), TMP=str(tmp))
    cmd = [sys.executable, "-m", "vramdesk", "export", *args]
    return subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=cwd, env=env)


def test_cli_export_of_a_model_takes_the_format_from_the_suffix(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = _cli("Qwen/Qwen3-4B", "--gpu", "RTX 4090", "-o", "x.png", cwd=tmp_path, tmp=tmp)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1 and re.fullmatch(r"wrote x\.png \(PNG chart, 2400 x 1280 px, \d+ KB\)", lines[0])
    image = QImage(str(tmp_path / "x.png"))
    assert (image.width(), image.height()) == (2400, 1280) and rgb(image, 2, 2) == WHITE
    assert list(tmp.iterdir()) == []  # the child's scenario file is gone

    proc = _cli("Qwen/Qwen3-4B", "--gpu", "RTX 4090", "-o", "d.png", "--screen-theme", "dark", cwd=tmp_path, tmp=tmp)
    assert proc.returncode == 0, proc.stderr
    assert rgb(QImage(str(tmp_path / "d.png")), 2, 2) == DARK_BG


def test_cli_export_of_a_scenario_file_as_svg_and_report_pdf(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    save_scenario(DEFAULT_SCENARIO, tmp_path / "x.scenario.json")
    proc = _cli("x.scenario.json", "-o", "y.svg", "--chart", "breakdown", cwd=tmp_path, tmp=tmp)
    assert proc.returncode == 0, proc.stderr
    assert re.fullmatch(r"wrote y\.svg \(SVG chart, \d+ KB\)\n", proc.stdout)
    texts = svg_texts(tmp_path / "y.svg")
    assert DEFAULT_SCENARIO.name in texts and "weights" in texts
    proc = _cli("x.scenario.json", "-o", "y.pdf", cwd=tmp_path, tmp=tmp)
    pages = pdf_pages((tmp_path / "y.pdf").read_bytes())
    assert proc.returncode == 0 and re.fullmatch(rf"wrote y\.pdf \(PDF report, {pages} pages, \d+ KB\)\n", proc.stdout)
    assert pages > 1 and pdf_title((tmp_path / "y.pdf").read_bytes()) == DEFAULT_SCENARIO.name
    assert list(tmp.iterdir()) == []
