"""The model browser's Fit column in the window: badges for the bundled catalog under the form's plan, sorting and
the filter by fit, badges that follow the form's GPU and workload, a Hub result not on this machine, Chinese."""

from __future__ import annotations

import threading

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor
from uiwindow import make_window, wait_advice

from vramdesk.core.gpu import GIB, MIB
from vramdesk.services.catalog import default_catalog
from vramdesk.services.nvml import DetectedGpu, DetectionResult
from vramdesk.services.search import HubAnswer, SearchResult
from vramdesk.ui import theme
from vramdesk.ui.browser import ModelBrowser, SearchResultModel
from vramdesk.ui.fit_badges import STATES, FitPlan, compute_badge
from vramdesk.ui.main_window import MainWindow

FIT = SearchResultModel.FIT
TOOLTIP = Qt.ItemDataRole.ToolTipRole
CJK = ("\u4e00", "\u9fff")


def badged(qtbot, browser: ModelBrowser) -> None:
    """Wait until every listed model has its badge for the browser's plan."""

    def done() -> bool:
        plan = browser.plan
        ids = [r.id for r in browser.model.rows]
        return plan is not None and not browser.badging and not browser.badges.missing(plan.key, ids)

    qtbot.waitUntil(done, timeout=30_000)


def search(qtbot, w: MainWindow, query: str) -> None:
    w.browser.search_box.setText(query)
    w.browser.search_now()
    badged(qtbot, w.browser)


def cell(browser: ModelBrowser, model_id: str, role: int = Qt.ItemDataRole.DisplayRole) -> object:
    row = [r.id for r in browser.model.rows].index(model_id)
    return browser.model.index(row, FIT).data(role)


def shown_ids(browser: ModelBrowser) -> list[str]:
    """The results in the table's order (sorted, filtered)."""
    return [browser.proxy.index(i, 0).data() for i in range(browser.proxy.rowCount())]


def test_the_catalog_is_badged_for_the_default_plan_on_an_rtx_4090(qtbot) -> None:
    w = make_window(qtbot)
    browser = w.browser
    badged(qtbot, browser)
    assert w.form.values().gpu == "RTX 4090"
    text = cell(browser, "Qwen/Qwen3-4B")
    assert text == "Fits ≤ 39.5k"
    # the badge's longest input is the form's max-length readout for the same model
    advice = wait_advice(qtbot, w)
    own = browser.model.badge([r.id for r in browser.model.rows].index("Qwen/Qwen3-4B"))
    assert advice.max_length is not None and own is not None and own.max_length == advice.max_length.value == 40_448
    assert cell(browser, "Qwen/Qwen3-4B", Qt.ItemDataRole.ForegroundRole) == QColor(theme.VERDICT_COLORS["fits"])
    tip = str(cell(browser, "Qwen/Qwen3-4B", TOOLTIP))
    assert "needs 9." in tip and "of 23.99 GiB total" in tip and "40,448" in tip
    assert browser.fit_caption.text() == "Fit on RTX 4090"
    search(qtbot, w, "70b")
    assert cell(browser, "meta-llama/Llama-3.1-70B") == "Does not fit"
    red = QColor(theme.VERDICT_COLORS["does not fit"])
    assert cell(browser, "meta-llama/Llama-3.1-70B", Qt.ItemDataRole.ForegroundRole) == red
    assert "short by" in str(cell(browser, "meta-llama/Llama-3.1-70B", TOOLTIP))


def test_sorting_by_fit_puts_what_fits_first_and_the_filter_hides_what_does_not(qtbot) -> None:
    w = make_window(qtbot)
    browser = w.browser
    badged(qtbot, browser)
    rows = browser.model.rows
    assert shown_ids(browser) == [r.id for r in rows]  # the search's ranking until a header is clicked
    header = browser.table.horizontalHeader()
    x = header.sectionViewportPosition(FIT) + header.sectionSize(FIT) // 2

    def click_fit_header() -> None:
        qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(x, header.height() // 2))

    click_fit_header()
    assert header.sortIndicatorOrder() == Qt.SortOrder.AscendingOrder
    assert header.sortIndicatorSection() == FIT
    states = [browser.proxy.index(i, FIT).data(Qt.ItemDataRole.UserRole) for i in range(browser.proxy.rowCount())]
    assert states[0] == "fits" and "does not fit" in states
    assert [STATES.index(s) for s in states] == sorted(STATES.index(s) for s in states)
    lengths = [browser.model.badge(browser.proxy.mapToSource(browser.proxy.index(i, 0)).row()) for i in range(3)]
    assert [b.max_length for b in lengths if b] == sorted((b.max_length for b in lengths if b), reverse=True)
    click_fit_header()  # descending: what does not fit (and unknown) first
    assert browser.proxy.index(0, FIT).data(Qt.ItemDataRole.UserRole) != "fits"
    click_fit_header()  # a third click: the search's ranking again
    assert header.sortIndicatorSection() == -1 and shown_ids(browser) == [r.id for r in rows]
    click_fit_header()
    # a click on the sorted list picks the row shown there
    first = shown_ids(browser)[0]
    with qtbot.waitSignal(w.estimated, timeout=5000):
        browser.table.clicked.emit(browser.proxy.index(0, 0))
    assert w.view is not None and w.view.model_id == first

    fits = [r.id for i, r in enumerate(rows) if browser.model.badge(i).state == "fits"]  # type: ignore[union-attr]
    browser.fit_filter.setCurrentIndex(browser.fit_filter.findData("fits"))
    assert sorted(shown_ids(browser)) == sorted(fits) and 0 < len(fits) < len(rows)
    assert "Qwen/Qwen3-32B" in [r.id for r in rows] and "Qwen/Qwen3-32B" not in shown_ids(browser)
    browser.fit_filter.setCurrentIndex(browser.fit_filter.findData("all"))
    assert len(shown_ids(browser)) == len(rows)


def test_a_bigger_gpu_in_the_form_flips_a_badge(qtbot) -> None:
    w = make_window(qtbot)
    browser = w.browser
    search(qtbot, w, "qwen3 14b")
    assert cell(browser, "Qwen/Qwen3-14B") == "Does not fit"
    w.gpu_combo.setCurrentIndex(w.gpu_combo.findData("H100 SXM"))
    qtbot.waitUntil(lambda: str(cell(browser, "Qwen/Qwen3-14B")).startswith("Fits ≤ "), timeout=30_000)
    assert browser.fit_caption.text() == "Fit on H100 SXM"
    assert "of 79.65 GiB total" in str(cell(browser, "Qwen/Qwen3-14B", TOOLTIP))  # the H100's memory, not the 4090's


def test_the_newest_workload_wins_and_the_badges_are_its_own(qtbot) -> None:
    w = make_window(qtbot)
    browser = w.browser
    search(qtbot, w, "qwen3 8b")
    ids = [r.id for r in browser.model.rows]
    before = browser.model.badge(ids.index("Qwen/Qwen3-8B"))
    w.widget("batch").setValue(2)
    w.estimate_now()
    browser.apply_plan()  # no debounce: its badges are being computed...
    second = browser.plan
    assert second is not None and browser.fit_runner.busy
    w.widget("batch").setValue(4)
    w.estimate_now()
    browser.apply_plan()  # ...when the workload changes again: that computation is cancelled
    badged(qtbot, browser)
    assert browser.badges.missing(second.key, ids) == ids  # nothing of the cancelled plan came in
    scenario = w.current_scenario()
    assert scenario is not None and scenario.workload.batch == 4
    plan = browser.plan
    assert plan is not None and plan.key == FitPlan(scenario, default_catalog().gpu("RTX 4090")).key
    now = browser.model.badge(ids.index("Qwen/Qwen3-8B"))
    assert now == compute_badge(plan, "Qwen/Qwen3-8B", default_catalog().facts("Qwen/Qwen3-8B"))
    assert now is not None and before is not None and now.max_length is not None and before.max_length is not None
    assert now.max_length < before.max_length  # four sequences share the memory


def test_without_a_gpu_the_column_says_so_and_shows_memory_needed(qtbot) -> None:
    w = make_window(qtbot)
    browser = w.browser
    w.gpu_combo.setCurrentIndex(w.gpu_combo.findData(None))
    qtbot.waitUntil(lambda: browser.plan is not None and browser.plan.gpu is None, timeout=5000)
    badged(qtbot, browser)
    assert w.view is not None and w.view.verdict is None
    assert cell(browser, "Qwen/Qwen3-4B") == f"needs {w.view.device_bytes / 2**30:.2f} GiB"
    tip = browser.model.headerData(FIT, Qt.Orientation.Horizontal, TOOLTIP)
    assert tip.startswith("No GPU chosen or detected")
    assert not browser.fit_filter.isEnabled() and browser.fit_caption.text() == "No GPU: memory needed"


def test_a_detected_gpu_badges_against_its_free_memory(qtbot) -> None:
    busy = DetectedGpu(index=0, name="NVIDIA GeForce RTX 4090", total=24564 * MIB, free=12 * GIB, used=12 * GIB)
    w = make_window(qtbot, detect=lambda: DetectionResult(gpus=[busy]))
    browser = w.browser
    # the window plans for the GPU it found, with what is free on it
    qtbot.waitUntil(
        lambda: browser.plan is not None and bool(browser.plan.gpu) and browser.plan.gpu.free_bytes == 12 * GIB,
        timeout=5000,
    )
    search(qtbot, w, "qwen3 8b")
    # 16.97 GiB fits the card's 23.99 GiB, not the 12 GiB other processes leave free
    assert cell(browser, "Qwen/Qwen3-8B") == "Does not fit"
    assert "free" in str(cell(browser, "Qwen/Qwen3-8B", TOOLTIP))
    assert str(cell(browser, "Qwen/Qwen3-8B-AWQ")).startswith("Fits ≤ ")  # 4-bit weights: it fits in what is free


class OneHubModel:
    def __call__(self, query: str, cancel: threading.Event) -> HubAnswer:
        hit = SearchResult(id="acme/qwen-remote", source="hub", sources=("hub",), params=4_000_000_000)
        return HubAnswer(results=[hit])


def test_a_hub_result_not_on_this_machine_shows_a_dash_until_it_is_looked_at(qtbot) -> None:
    resolved: list[str] = []

    def resolve(ref: str):
        resolved.append(ref)
        return default_catalog().facts("Qwen/Qwen3-4B")

    w = make_window(qtbot, hub_search=OneHubModel(), resolve=resolve)
    browser = w.browser
    browser.search_box.setText("qwen remote")
    browser.search_now()
    qtbot.waitUntil(lambda: browser.last_hub is not None, timeout=5000)
    badged(qtbot, browser)
    assert cell(browser, "acme/qwen-remote") == "–"
    assert str(cell(browser, "acme/qwen-remote", TOOLTIP)).startswith(
        "Cannot estimate: Not estimated: its config is not on this machine"
    )
    assert resolved == []  # badging never looked the model up
    with qtbot.waitSignal(w.estimated, timeout=5000):
        w.choose_model("acme/qwen-remote")
    qtbot.waitUntil(lambda: str(cell(browser, "acme/qwen-remote")).startswith("Fits ≤ "), timeout=30_000)
    assert resolved == ["acme/qwen-remote"]  # the window's own lookup, once


def test_the_fit_column_in_chinese(qtbot, chinese) -> None:
    w = make_window(qtbot)
    browser = w.browser
    search(qtbot, w, "qwen3")
    assert browser.model.headerData(FIT, Qt.Orientation.Horizontal) == "适配"
    assert cell(browser, "Qwen/Qwen3-4B") == "可以运行 ≤ 39.5k"
    assert cell(browser, "Qwen/Qwen3-32B") == "放不下"
    for model in ("Qwen/Qwen3-4B", "Qwen/Qwen3-32B"):
        tip = str(cell(browser, model, TOOLTIP))
        assert any(CJK[0] <= ch <= CJK[1] for ch in tip) and "needs" not in tip and "largest" not in tip, tip
    assert browser.fit_filter.itemText(browser.fit_filter.findData("fits")) == "只看可以运行的"
    assert browser.fit_caption.text() == "在 RTX 4090 上的适配情况"
