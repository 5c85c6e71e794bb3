"""Export of charts and reports (every format opened back), the compare / library window, the main
window's new actions, and the `compare` / `export` commands. Qt runs offscreen (tests/conftest.py)."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, QStandardPaths
from PySide6.QtGui import QColor, QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

from vramdesk import cli
from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.scenario import SCHEMA_VERSION, Scenario
from vramdesk.storage.library import Autosave, ScenarioLibrary
from vramdesk.storage.paths import DATA_DIR_ENV
from vramdesk.storage.scenarios import save_scenario
from vramdesk.ui import export as ex
from vramdesk.ui import i18n, qtapp
from vramdesk.ui.compare import LibraryWindow
from vramdesk.ui.estimate_figure import SIZES
from vramdesk.ui.main_window import EXPORTS, MainWindow
from vramdesk.ui.presenter import evaluate_scenario
from vramdesk.ui.window_actions import EXPORT_CHARTS


@pytest.fixture(autouse=True)
def _isolated(tmp_path_factory, tmp_path, monkeypatch):
    monkeypatch.setenv("VRAMDESK_LANG", "en")
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))
    QStandardPaths.setTestModeEnabled(True)
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(
        QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path_factory.getbasetemp() / "qsettings")
    )


def variant(**work: object) -> Scenario:
    data = DEFAULT_SCENARIO.model_dump()
    for k, v in work.items():
        if k == "weights":
            data["weights"] = v
        elif k == "name":
            data["name"] = v
        else:
            data["workload"][k] = v
    return Scenario.model_validate(data)


def pdf_pages(data: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page(?![s\w])", data))


def not_blank(image: QImage) -> bool:
    small = image.scaled(64, 32)
    colors = {small.pixel(x, y) for x in range(small.width()) for y in range(small.height())}
    return len(colors) > 4


def check_pdf(path: Path, pages: int | None = None) -> None:
    data = path.read_bytes()
    assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF")
    n = pdf_pages(data)
    assert n >= 1 and (pages is None or n == pages)
    if shutil.which("pdftoppm"):  # optional: render page 1 and look at it (CI does not need poppler)
        subprocess.run(["pdftoppm", "-r", "30", "-f", "1", "-l", "1", "-png", str(path), str(path)], check=True)
        [png] = path.parent.glob(path.name + "*.png")
        image = QImage(str(png))
        assert not image.isNull() and not_blank(image)


@pytest.fixture(scope="module")
def view():
    qtapp.ensure_app()
    ev = evaluate_scenario(DEFAULT_SCENARIO)
    assert ev.view is not None
    return ev.view


# ---------------------------------------------------------------------------------------------- export


def test_every_export_format_opens_back(qtbot, view, tmp_path: Path) -> None:
    perf = ex.speed_of(view, DEFAULT_SCENARIO)
    assert perf is not None
    out = {f: tmp_path / f"out.{f.replace('chart-', '')}" for f in ex.VIEW_FORMATS}
    out["chart-pdf"] = tmp_path / "charts.pdf"
    for fmt, path in out.items():
        assert ex.export_view(view, DEFAULT_SCENARIO, fmt, path, perf=perf) == path

    png = QImage(str(out["png"]))
    size = SIZES["both"]
    assert (png.width(), png.height()) == (size[0] * 2, size[1] * 2) and not_blank(png)

    svg = QSvgRenderer(str(out["svg"]))
    assert svg.isValid() and svg.defaultSize().width() > 100
    image = QImage(svg.defaultSize(), QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    svg.render(painter)
    painter.end()
    assert not_blank(image)

    check_pdf(out["chart-pdf"], pages=1)
    check_pdf(out["pdf"])
    assert pdf_pages(out["pdf"].read_bytes()) >= 2
    assert b"vramdesk report" in out["pdf"].read_bytes() or b"/Title" in out["pdf"].read_bytes()

    html = out["html"].read_text()
    assert "data:image/png;base64," in html and view.estimate.fit.message in html
    assert out["md"].read_text().startswith("# vramdesk report:")
    rows = list(csv.DictReader(io.StringIO(out["csv"].read_text())))
    assert sum(int(r["bytes"]) for r in rows if r["section"] == "peak") == view.peak_allocated_bytes
    doc = json.loads(out["json"].read_text())
    assert doc["device_bytes"] == view.device_bytes and doc["performance"]["decode_tokens_per_s"] > 0


def test_svg_of_the_pie_and_the_phase_chart(qtbot, view, tmp_path: Path) -> None:
    pie = ex.export_view(view, DEFAULT_SCENARIO, "svg", tmp_path / "pie.svg", mode="pie", chart="breakdown")
    phase = ex.export_view(view, DEFAULT_SCENARIO, "svg", tmp_path / "phase.svg", chart="phase")
    for path in (pie, phase):
        assert QSvgRenderer(str(path)).isValid()
    assert QSvgRenderer(str(pie)).viewBox().width() == SIZES["breakdown"][0]


def test_unwritable_output_fails_clearly(qtbot, view, tmp_path: Path) -> None:
    with pytest.raises(OSError, match="PNG"):
        ex.export_view(view, DEFAULT_SCENARIO, "png", tmp_path / "missing" / "x.png")
    with pytest.raises(ValueError, match="unknown format"):
        ex.export_view(view, DEFAULT_SCENARIO, "bmp", tmp_path / "x.bmp")


# ---------------------------------------------------------------------------------------------- main window


@pytest.fixture
def window(qtbot, tmp_path: Path) -> MainWindow:
    qtapp.ensure_app()
    w = MainWindow(
        DEFAULT_SCENARIO, hub_search=None, detect=None, library=ScenarioLibrary(tmp_path / "lib"), autosave=True
    )
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    return w


def test_save_to_library_and_save_again(window: MainWindow) -> None:
    entry_id = window.save_to_library(name="plan A")
    assert entry_id == "plan-A.vramdesk.json"
    window.widget("batch").setValue(6)
    window.estimate_now()
    assert window.save_to_library() == entry_id  # Save writes back to the entry it came from
    entry = window.library.get(entry_id)
    assert entry.scenario.workload.batch == 6 and entry.scenario.name == "plan A"
    second = window.save_to_library(name="plan B", as_new=True)
    assert second != entry_id and len(window.library.entries()) == 2


def test_the_comparison_exports_its_chart_as_png_and_inside_html(qtbot, window: MainWindow, tmp_path: Path) -> None:
    """The comparison chart is a pyqtgraph view, whose render() has another signature than QWidget's: PNG and HTML
    export of the comparison raised TypeError until render_image called QWidget's render."""
    lib = window.library
    a = lib.save(DEFAULT_SCENARIO, name="bf16")
    b = lib.save(variant(batch=8), name="batch 8")
    win: LibraryWindow = window.open_library()
    qtbot.addWidget(win)
    win.set_checked([a.id, b.id])
    win.update_comparison()
    png = QImage(str(win.export(tmp_path / "cmp.png")))
    assert not png.isNull() and png.width() > 100 and not_blank(png)
    html = win.export(tmp_path / "cmp.html").read_text(encoding="utf-8")
    assert "data:image/png;base64," in html and "batch 8" in html


def test_library_window_compares_and_follows_changes(qtbot, window: MainWindow) -> None:
    lib = window.library
    a = lib.save(DEFAULT_SCENARIO, name="bf16")
    b = lib.save(variant(weights="int4"), name="int4", tags=["cheap"])
    c = lib.save(variant(batch=8), name="batch 8")
    win: LibraryWindow = window.open_library()
    qtbot.addWidget(win)
    assert win.list.count() == 3 and "[cheap]" in " ".join(win.list.item(i).text() for i in range(3))
    win.include_current.setChecked(False)
    win.set_checked([a.id])
    win.update_comparison()
    assert win.comparison is None and "Tick 2 to 6" in win.status.text()
    win.set_checked([a.id, b.id, c.id])
    win.update_comparison()
    cmp = win.comparison
    assert (cmp is not None and cmp.labels == ("batch 8", "int4", "bf16")) or set(cmp.labels) == {
        "bf16",
        "int4",
        "batch 8",
    }
    assert win.table.columnCount() == 4 and win.highlighted_cells()
    assert set(win.chart.stacks) >= {"weights", "KV cache"}
    weights = dict(zip(cmp.labels, win.chart.stacks["weights"], strict=True))
    assert weights["int4"] < weights["bf16"]
    # change one configuration on disk: the view updates
    lib.update(b.id, variant(weights="bf16"))
    win.reload()
    win.update_comparison()
    weights = dict(zip(win.comparison.labels, win.chart.stacks["weights"], strict=True))
    assert weights["int4"] == pytest.approx(weights["bf16"])
    # the current work as a column, following the main window
    win.include_current.setChecked(True)
    win.update_comparison()
    assert win.comparison.labels[0] == "Current work"
    window.widget("batch").setValue(5)
    window.estimate_now()
    win.update_comparison()
    batch = next(r for r in win.comparison.rows if r.name == "workload.batch")
    assert batch.cells[0] == "5"
    # copies and exports of the comparison
    assert win.table_text("md").startswith("# vramdesk comparison")
    assert win.table_text("tsv").splitlines()[0].split("\t")[1] == "Current work"
    win.copy_table("md")
    assert QGuiApplication.clipboard().text().startswith("# vramdesk comparison")


def test_library_window_actions(qtbot, window: MainWindow, tmp_path: Path) -> None:
    lib = window.library
    a = lib.save(DEFAULT_SCENARIO, name="one")
    win = window.open_library()
    qtbot.addWidget(win)
    win.select(a.id)
    win.rename_selected("two")
    assert [e.name for e in lib.entries()] == ["two"]
    win.select("two.vramdesk.json")
    win.duplicate_selected()
    assert sorted(e.name for e in lib.entries()) == ["two", "two (copy)"]
    win.select("two.vramdesk.json")
    win.tag_selected(["x", "y"])
    assert lib.get("two.vramdesk.json").tags == ("x", "y")
    win.select("two.vramdesk.json")
    win.export_selected(tmp_path / "shared.vramdesk.json")
    assert (tmp_path / "shared.vramdesk.json").is_file()
    win.select("two.vramdesk.json")
    win.delete_selected(confirm=False)
    assert [e.name for e in lib.entries()] == ["two (copy)"] and list(lib.trash_dir.iterdir())
    (lib.root / "broken.vramdesk.json").write_text("{")
    win.reload()
    assert win.report_label.isVisibleTo(win) and "moved aside" in win.report_label.text()
    win.select("two-copy.vramdesk.json")
    seen = []
    win.open_requested.connect(seen.append)
    win.open_selected()
    assert seen and seen[0].name == "two (copy)"
    assert window.library_entry_id == "two-copy.vramdesk.json"


def test_window_exports_and_copies(window: MainWindow, tmp_path: Path) -> None:
    for fmt, *_ in EXPORTS:
        path = window.export_current(fmt, tmp_path / f"w.{fmt.replace('chart-', '')}")
        assert path.stat().st_size > 100
    window.copy_table("tsv")
    text = QGuiApplication.clipboard().text()
    assert text.splitlines()[1].split("\t")[1] == "weights"
    window.copy_table("md")
    assert QGuiApplication.clipboard().text().startswith("| Component |")
    window.copy_chart()
    assert not QGuiApplication.clipboard().image().isNull()


def test_autosave_restore_and_clean_exit(qtbot, tmp_path: Path) -> None:
    qtapp.ensure_app()
    w = MainWindow(DEFAULT_SCENARIO, hub_search=None, detect=None, autosave=True)
    qtbot.addWidget(w)
    w.widget("batch").setValue(7)
    w.estimate_now()
    assert w._autosave_timer.isActive()
    w.autosave_now()
    assert json.loads(w.autosave_store.path.read_text())["workload"]["batch"] == 7
    # another window while this one runs: nothing to restore (this one did not crash)
    w2 = MainWindow(DEFAULT_SCENARIO, hub_search=None, detect=None, autosave=True)
    qtbot.addWidget(w2)
    assert not w2.offer_restore(ask=False)
    # the first window "crashes": its lock is gone with its process, its file stays
    assert w.autosave_store._lock is not None
    w.autosave_store._lock.release()
    w.autosave_store._lock = None
    assert w2.offer_restore(ask=False) and w2.widget("batch").value() == 7
    assert not w2.offer_restore(ask=False)  # offered once
    w2.autosave_now()
    path = w2.autosave_store.path
    assert path.is_file()
    w2.close()  # a clean exit removes this window's autosave
    assert not path.exists() and Autosave().orphans() == []


def test_open_a_newer_file_read_only(window: MainWindow, tmp_path: Path) -> None:
    data = variant(batch=9).model_dump(mode="json")
    data["schema_version"] = SCHEMA_VERSION + 1
    data["future"] = 1
    path = tmp_path / "future.json"
    path.write_text(json.dumps(data))
    assert window.open_scenario(path)
    assert window.widget("batch").value() == 9
    assert "newer vramdesk" in window.warnings_label.text() and window.library_entry_id is None


def test_new_strings_have_chinese_translations() -> None:
    table = i18n.table("zh_CN")
    wanted = {e[1] for e in EXPORTS} | {e[2] for e in EXPORTS}
    wanted |= {text for _, text in EXPORT_CHARTS}
    assert not sorted(s for s in wanted if s not in table)


# ---------------------------------------------------------------------------------------------- CLI


def run_cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = cli.main(list(args), out=out)
    return code, out.getvalue()


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.json", tmp_path / "b.vramdesk.json"
    save_scenario(variant(name="bf16"), a)
    save_scenario(variant(name="int4", weights="int4"), b)
    return a, b


def test_cli_compare_formats(files, capsys) -> None:
    a, b = files
    code, md = run_cli("compare", str(a), str(b))
    assert code == 0 and "| **Weights** | auto (checkpoint) | int4 |" in md
    code, text = run_cli("compare", str(a), str(b), "--format", "csv")
    rows = list(csv.reader(io.StringIO(text)))
    assert code == 0 and rows[0][6:] == ["bf16", "int4"]
    dev = next(r for r in rows if r[2] == "on the device (per GPU)")
    assert int(dev[6]) > int(dev[7])
    code, text = run_cli("compare", str(a), str(a), "--format", "json")
    doc = json.loads(text)
    assert code == 0 and doc["columns"] == ["bf16", "bf16 (2)"]
    assert run_cli("compare", str(a))[0] == 2
    assert run_cli("compare", str(a), str(a.parent / "nope.json"))[0] == 2
    assert "no such file" in capsys.readouterr().err


def test_cli_export_text_formats(files, tmp_path: Path, capsys) -> None:
    a, _ = files
    for fmt in ("csv", "md", "json"):
        out = tmp_path / f"e.{fmt}"
        assert run_cli("export", str(a), "--format", fmt, "-o", str(out))[0] == 0
    rows = list(csv.DictReader(io.StringIO((tmp_path / "e.csv").read_text())))
    assert rows[0]["name"] == "weights"
    assert (tmp_path / "e.md").read_text().startswith("# vramdesk report: bf16")
    assert json.loads((tmp_path / "e.json").read_text())["scenario"]["name"] == "bf16"
    assert run_cli("export", str(a), "--format", "md", "-o", str(tmp_path / "no" / "x.md"))[0] == 2
    assert "does not exist" in capsys.readouterr().err


def test_cli_export_pictures_in_a_child_process(files, tmp_path: Path) -> None:
    """png / pdf through the real command line (the child renders with Qt; the CLI process does not)."""
    a, _ = files
    exe = [sys.executable, "-m", "vramdesk"]
    for fmt in ("png", "pdf"):
        out = tmp_path / f"c.{fmt}"
        cmd = [*exe, "export", str(a), "--format", fmt, "-o", str(out)]
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    assert not QImage(str(tmp_path / "c.png")).isNull()
    check_pdf(tmp_path / "c.pdf")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    proc = subprocess.run(
        [*exe, "export", str(bad), "--format", "png", "-o", str(tmp_path / "x.png")],
        check=False,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "bad.json: malformed JSON" in proc.stderr
