"""The window in Chinese shows the services' and storage's texts in Chinese, in the real widgets: the NVML reason in
the hardware box, a Hub error under the search results and in the error line of a model that cannot be read, the
model browser's details, the library window's notices, and the notice of a scenario file that could not be opened.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_nvml.pyfake import RTX, FakeNvml, NVMLError, NVMLError_DriverNotLoaded
from fakehub import FakeHub, hub_environment
from uiwindow import make_window

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.services import nvml as nv
from vramdesk.services.cache import AnswerCache
from vramdesk.services.hub import HubClient
from vramdesk.services.resolve import resolve_model
from vramdesk.services.search import hub_results
from vramdesk.storage.library import ScenarioLibrary, file_text
from vramdesk.ui import app as ui_app
from vramdesk.ui import qtapp

CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeHub]:
    with hub_environment(monkeypatch, tmp_path) as fake:
        yield fake


def test_the_nvml_reason_is_chinese_in_the_hardware_box(qtbot, chinese) -> None:
    not_loaded = NVMLError_DriverNotLoaded("Driver Not Loaded")
    w = make_window(qtbot, detect=lambda: nv.detect_gpus(FakeNvml([RTX], init_error=not_loaded)))
    text = w.form.detected_label.text()
    assert "NVIDIA 驱动已安装，但尚未加载" in text and "not loaded" not in text


def test_a_partly_failed_detection_says_why_in_chinese(qtbot, chinese) -> None:
    class OneLost(FakeNvml):
        def nvmlDeviceGetName(self, h: dict) -> str:
            if h.get("lost"):
                raise NVMLError("GPU is lost")
            return super().nvmlDeviceGetName(h)

    w = make_window(qtbot, detect=lambda: nv.detect_gpus(OneLost([RTX, {**RTX, "lost": True}])))
    text = w.form.detected_label.text()
    assert "RTX 4090" in text and "GPU 1：GPU 已丢失" in text and "is lost" not in text


def test_a_hub_error_and_the_details_are_chinese_in_the_browser(qtbot, chinese, hub: FakeHub, tmp_path: Path) -> None:
    hub.fail[r"^/api/models$"] = (503, "")
    answers = AnswerCache(tmp_path / "answers")

    def search(query: str, cancel: threading.Event):
        return hub_results(query, client=HubClient(token=False, timeout=3.0, cancel=cancel), answers=answers)

    w = make_window(qtbot, hub_search=search)
    browser = w.browser
    browser.search_box.setText("qwen3")
    browser.search_now()
    qtbot.waitUntil(lambda: bool(browser.hub_note.text()), timeout=10_000)
    note = browser.hub_note.text()
    host = hub.url.split("://", 1)[1]
    assert note == f"在 Hub 上搜索“qwen3”：{host} 返回了 HTTP 503；请稍后重试；仅显示目录和缓存中的结果"
    # a catalog result's details: where it comes from, in Chinese
    browser.table.selectRow(0)
    details = browser.details.text()
    assert "公布的参数总量" in details and "published total" not in details
    tip = browser.model.data(browser.model.index(0, 0), 3)  # ToolTipRole
    assert "published total" not in tip and CJK.search(tip)


def test_a_model_that_cannot_be_read_shows_its_error_in_chinese(qtbot, chinese, hub: FakeHub, tmp_path: Path) -> None:
    hub.add_model("acme/gated-llama", files={"config.json": json.dumps({"model_type": "llama"})})
    hub.gated.add("acme/gated-llama")
    answers = AnswerCache(tmp_path / "answers")

    def resolve(ref: str):
        client = HubClient(token=False, timeout=3.0)
        return resolve_model(ref, client=client, cache_dir=tmp_path / "hf-cache", answers=answers)

    w = make_window(qtbot, resolve=resolve)
    w.choose_model("acme/gated-llama")
    qtbot.waitUntil(lambda: "acme/gated-llama" in w.message_label.text() and not w.pending, timeout=10_000)
    qtbot.waitUntil(lambda: "受限访问" in w.message_label.text(), timeout=5_000)
    message = w.message_label.text()
    assert "下载 acme/gated-llama 的 config.json" in message and "请设置 Hugging Face 令牌" in message
    assert "is gated" not in message and "not in the bundled catalog" not in message


def test_the_library_window_notices_are_chinese(qtbot, chinese, tmp_path: Path) -> None:
    root = tmp_path / "lib"
    lib = ScenarioLibrary(root)
    lib.save(DEFAULT_SCENARIO, name="kept")
    (root / "broken.vramdesk.json").write_text("{oops")
    newer = json.loads(file_text(DEFAULT_SCENARIO))
    newer.update(schema_version=99, name="from the future")
    (root / "newer.vramdesk.json").write_text(json.dumps(newer))
    w = make_window(qtbot, library=lib)
    win = w.open_library()
    try:
        report = win.report_label.text()
        assert "不是 JSON 场景文件（JSON 格式错误，位于第 1 行第 2 列：此处应为用双引号括起的属性名）" in report
        assert "not a JSON scenario file" not in report and "corrupted" in report  # the folder's name stays
        item = next(win.list.item(i) for i in range(win.list.count()) if "from the future" in win.list.item(i).text())
        assert "由较新版本的 vramdesk 保存（格式版本 99" in item.toolTip() and "saved by" not in item.toolTip()
        # opened from the library: the read-only note above the charts
        win.list.setCurrentItem(item)
        win.open_selected()
        qtbot.waitUntil(lambda: "已以只读方式打开" in w.warnings_label.text(), timeout=5_000)
        assert "opened read-only" not in w.warnings_label.text()
    finally:
        win.close()


def test_a_scenario_file_that_cannot_be_opened_says_so_in_chinese(qtbot, chinese, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    qtapp.ensure_app()
    w = ui_app.open_window(bad)  # the notice the app builds (English on stderr)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: bool(w.warnings_label.text()), timeout=5_000)
    text = w.warnings_label.text()
    assert "无法打开场景文件" in text and "场景必须是一个 JSON 对象" in text and "改为显示默认场景" in text
    assert str(bad) in text and "could not open" not in text
    w.close()
