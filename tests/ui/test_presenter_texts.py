"""The texts the window shows for an estimate, built without Qt: the speed line (speed_view), the advice and
its changes (advice_view), the verdict box, GPU chips, readouts, legend and warnings (results_view), and the
display unit (presenter).

Every test estimates a real plan of the catalog and reads the text in English, then in Simplified Chinese
(``i18n.set_language("zh_CN")``, English again after)."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from pydantic import ValidationError

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.gpu import GIB
from vramdesk.core.scenario import Scenario
from vramdesk.core.solve import ChangesResult, maximize
from vramdesk.services.accuracy import measured_accuracy
from vramdesk.services.resolve import resolve_gpu, resolve_model
from vramdesk.ui import i18n, presenter, theme
from vramdesk.ui.advice_view import (
    MAX_CHANGES,
    MORE_GPU_PLACES,
    Advice,
    apply_label,
    change_button,
    changes_panel,
    compute_advice,
    max_length_readout,
)
from vramdesk.ui.core_text import localize, localize_name
from vramdesk.ui.presenter import EstimateView, describe_error, evaluate_scenario, gib
from vramdesk.ui.results_view import (
    accuracy_note,
    error_texts,
    gpu_chips,
    legend_entries,
    pending_texts,
    readouts,
    scenario_caption,
    verdict_texts,
    warnings_html,
)
from vramdesk.ui.speed_view import estimate_speed, seconds_text, speed_line

CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(autouse=True)
def _english_in_gib() -> Iterator[None]:
    """Every test starts in English and GiB, and leaves them so."""
    unit = presenter.unit_name()
    presenter.set_unit("GiB")
    i18n.set_language("en")
    try:
        yield
    finally:
        i18n.set_language("en")
        presenter.set_unit(unit)


@contextmanager
def chinese() -> Iterator[None]:
    i18n.set_language("zh_CN")
    try:
        yield
    finally:
        i18n.set_language("en")


def plan(model: str = "Qwen/Qwen3-4B", gpu: str | None = "RTX 4090", **data: Any) -> Scenario:
    """The default scenario with another model and GPU; ``workload`` / ``hardware`` / ``parallelism`` update
    those sections."""
    d = DEFAULT_SCENARIO.model_dump(mode="json")
    d["model"] = {"id": model}
    d["hardware"]["gpu"] = gpu
    for section, values in data.items():
        if section == "workload" and values.get("kind") == "finetune":
            d["workload"] = values
        else:
            d.setdefault(section, {}).update(values)
    return Scenario.model_validate(d)


def view_of(s: Scenario, **kw: Any) -> EstimateView:
    ev = evaluate_scenario(s, **kw)
    assert ev.view is not None, ev.error
    return ev.view


# ---------------------------------------------------------------------------------------------- speed


def test_seconds_text() -> None:
    assert [seconds_text(s) for s in (0.48, 2.4, 186.0)] == ["480 ms", "2.4 s", "3.1 min"]


def test_speed_line_of_an_inference_plan() -> None:
    s = plan()
    view, gpu = view_of(s), resolve_gpu("RTX 4090")
    assert gpu is not None
    perf = estimate_speed(view, s, resolve_model, gpu)
    assert perf is not None and perf.decode_tokens_per_s is not None and perf.time_to_first_token_s is not None
    line = speed_line(perf)
    assert line is not None
    assert line.text == (
        f"Speed: decode {perf.decode_tokens_per_s:,.1f} tokens/s per sequence · time to first token "
        f"{seconds_text(perf.time_to_first_token_s)} — bound by {perf.bound}"
    )
    assert line.tooltip == "\n".join(["Assumptions:"] + [f"• {a}" for a in perf.assumptions])
    with chinese():
        zh = speed_line(perf)
    assert zh is not None
    assert zh.text == (
        f"速度: 解码 {perf.decode_tokens_per_s:,.1f} token/秒（每序列） · 首 token 时间 "
        f"{seconds_text(perf.time_to_first_token_s)} — 瓶颈： {i18n.table('zh_CN')[perf.bound]}"
    )
    assert zh.tooltip.startswith("假设：\n• ") and CJK.search(zh.tooltip.split("\n", 2)[1])
    assert zh.tooltip.split("\n")[1:] == [f"• {localize(a, 'zh_CN')}" for a in perf.assumptions]


def test_speed_line_of_a_fine_tuning_plan() -> None:
    s = plan(workload={"kind": "finetune", "method": "qlora"})
    gpu = resolve_gpu("RTX 4090")
    assert gpu is not None
    perf = estimate_speed(view_of(s), s, resolve_model, gpu)
    assert perf is not None and perf.step_time_s is not None and perf.train_tokens_per_s is not None
    line = speed_line(perf)
    assert line is not None
    assert line.text == (
        f"Speed: training step {seconds_text(perf.step_time_s)} · {perf.train_tokens_per_s:,.0f} tokens/s "
        f"— bound by {perf.bound}"
    )
    with chinese():
        zh = speed_line(perf)
    assert zh is not None and zh.text.startswith(f"速度: 训练步 {seconds_text(perf.step_time_s)} · ")


def test_no_speed_without_the_models_facts() -> None:
    s = plan()
    gpu = resolve_gpu("RTX 4090")
    assert gpu is not None

    def unknown(model_id: str) -> Any:
        raise LookupError(model_id)

    assert estimate_speed(view_of(s), s, unknown, gpu) is None


# ---------------------------------------------------------------------------------------------- advice


def _advice(s: Scenario, gpu_name: str = "RTX 4090") -> Advice:
    gpu = resolve_gpu(gpu_name)
    assert gpu is not None
    view = view_of(s)
    return compute_advice(s, resolve_model(s.model.id), gpu, verdict=view.verdict)


def test_changes_that_make_a_plan_fit() -> None:
    s = plan("Qwen/Qwen3-14B", workload={"input_len": 16384})
    advice = _advice(s)
    assert advice.verdict == "does not fit" and advice.scenario == s and advice.length_field == "input_len"
    assert advice.changes is not None and advice.changes.options
    panel = changes_panel(advice.changes, "does not fit")
    assert panel.visible and panel.caption == "Smallest changes that make it fit (click one to apply it):"
    # the first changes on the plan's GPU, then (a place kept for them) the first with more GPUs, each group headed
    same = [o for o in advice.changes.options if not o.more_gpus]
    more = [o for o in advice.changes.options if o.more_gpus]
    assert len(same) >= MAX_CHANGES and more
    n_same = MAX_CHANGES - min(len(more), MORE_GPU_PLACES)
    assert panel.options == (*same[:n_same], *more[: MAX_CHANGES - n_same])
    assert len(panel.buttons) == len(panel.options) == MAX_CHANGES
    headings = [b.heading for b in panel.buttons]
    assert headings == ["On this GPU", *[""] * (n_same - 1), "With more GPUs", *[""] * (MAX_CHANGES - n_same - 1)]
    assert panel.rule == advice.changes.ranking and panel.rule_tooltip == advice.changes.rule
    o = panel.options[0]
    speed = f", {o.tokens_per_s:,.1f} tokens/s" if o.tokens_per_s else ""
    title = presenter.VERDICT_TITLES[o.verdict]
    assert panel.buttons[0].text == f"→ {o.summary}: {gib(o.device_bytes)} ({title}{speed})"
    assert panel.buttons[0].tooltip == f"cost {o.cost:g} (quality + speed, lower is better)"
    assert apply_label(o) == "Apply " + "; ".join(c.description for c in o.changes)
    # the list is only under "does not fit" (the advice of an older estimate may come back after a fix)
    assert not changes_panel(advice.changes, "fits").visible
    with chinese():
        zh = change_button(o)
        zh_panel = changes_panel(advice.changes, "does not fit")
        zh_apply = apply_label(o)
    assert zh.text.startswith(f"→ {localize(o.summary, 'zh_CN')}：{gib(o.device_bytes)}（") and CJK.search(zh.text)
    assert i18n.table("zh_CN")[title] in zh.text
    assert zh.tooltip == f"代价 {o.cost:g}（质量 + 速度，越低越好）"
    assert zh_panel.caption == "能让它放得下的最小改动（点击即可应用）："
    assert zh_apply == "应用 " + "; ".join(localize(c.description, "zh_CN") for c in o.changes)


def test_no_change_helps() -> None:
    s = plan("Qwen/Qwen3-14B", workload={"input_len": 16384})
    advice = _advice(s)
    assert advice.changes is not None
    none = ChangesResult(current_verdict="does not fit", options=(), tried=advice.changes.tried, rule="")
    panel = changes_panel(none, "does not fit")
    assert panel.visible and not panel.buttons
    assert panel.caption == "No single change or pair of changes makes it fit."
    assert not changes_panel(None, "does not fit").visible
    with chinese():
        assert changes_panel(none, "does not fit").caption == "没有任何单项或两项改动能让它放得下。"


def test_max_length_readout_names_what_limits_it() -> None:
    s = plan("Qwen/Qwen3-8B", workload={"input_len": 8192})
    advice = _advice(s)
    gpu = resolve_gpu("RTX 4090")
    assert gpu is not None and advice.changes is None and advice.max_length is not None
    expected = maximize(s, resolve_model(s.model.id), gpu, "input_len")
    readout = max_length_readout(advice)
    assert readout.length_field == "input_len" and readout.value == expected.value and readout.tight is None
    assert readout.tooltip.startswith(f"Limited by: memory\n{expected.message}")
    with chinese():
        zh = max_length_readout(advice)
    assert zh.tooltip.startswith(f"受限于: 显存\n{localize(expected.message, 'zh_CN')}") and zh.value == readout.value


def test_a_tight_plan_reads_the_tight_boundary() -> None:
    s = plan(
        "meta-llama/Llama-3.1-8B",
        "H100 SXM",
        workload={"kind": "finetune", "method": "full", "precision": "bf16", "seq_len": 4096},
    )
    advice = _advice(s, "H100 SXM")
    assert advice.verdict == "tight" and advice.length_field == "seq_len"
    fits, runs = advice.max_length, advice.max_length_tight
    assert fits is not None and runs is not None and fits.value is not None and runs.value is not None
    readout = max_length_readout(advice)
    assert readout.value == fits.value and readout.tight == runs.value
    line = f"fits with the headroom up to {fits.value:,}; runs, tight (inside the headroom), up to {runs.value:,}"
    assert readout.tooltip.endswith("\n" + line)
    with chinese():
        zh = max_length_readout(advice)
    assert zh.tooltip.endswith(f"\n留足余量时最大 {fits.value:,}；在余量内勉强运行时最大 {runs.value:,}")


def test_a_failed_search_reads_its_error() -> None:
    readout = max_length_readout(Advice(scenario=None, length_field="seq_len", max_length_error="boom"))
    assert (readout.length_field, readout.value, readout.tooltip, readout.tight) == ("seq_len", None, "boom", None)


# ---------------------------------------------------------------------------------------------- verdict box


def test_verdict_box_texts() -> None:
    s = plan("Qwen/Qwen3-14B", workload={"input_len": 16384})
    view = view_of(s)
    texts = verdict_texts(view)
    assert texts.title == "Does not fit" and texts.message == view.message
    assert texts.caption == "Qwen/Qwen3-14B on RTX 4090" and texts.color == theme.VERDICT_COLORS["does not fit"]
    assert not texts.is_error
    with chinese():
        zh = verdict_texts(view)
    assert zh.title == "放不下" and zh.message == localize(view.message, "zh_CN") and CJK.search(zh.message)
    assert zh.caption == "Qwen/Qwen3-14B 运行于 RTX 4090"


def test_scenario_caption_names_the_hardware() -> None:
    assert scenario_caption(view_of(plan(gpu=None))) == "Qwen/Qwen3-4B"
    zero3 = plan(
        "meta-llama/Llama-3.1-8B",
        "H100 SXM",
        hardware={"gpu_count": 8, "nodes": 2},
        parallelism={"zero": 3},
        workload={"kind": "finetune", "method": "full"},
    )
    view = view_of(zero3)
    assert scenario_caption(view) == "meta-llama/Llama-3.1-8B on 2 machines x 8 x H100 SXM"
    gpu = resolve_gpu("RTX 4090")
    assert gpu is not None
    detected = gpu.model_copy(update={"free_bytes": 20 * GIB})
    free = view_of(plan(), find_gpu=lambda _name: detected)
    assert scenario_caption(free) == "Qwen/Qwen3-4B on RTX 4090 (free memory of the detected GPU)"
    with chinese():
        assert scenario_caption(view) == "meta-llama/Llama-3.1-8B 运行于 2 台机器 x 8 x H100 SXM"
        assert scenario_caption(free) == "Qwen/Qwen3-4B 运行于 RTX 4090 (检测到的 GPU 的空闲显存)"


def test_pending_and_error_texts() -> None:
    pending = pending_texts("org/model")
    assert (pending.title, pending.message, pending.caption) == (
        "Reading the model…",
        "org/model: its config is being read; the estimate follows",
        "org/model",
    )
    assert pending.color == theme.VERDICT_COLORS[None] and not pending.is_error
    # what the window shows when the form's plan is invalid (evaluate_form describes the error the same way)
    with pytest.raises(ValidationError) as invalid:
        plan("Qwen/Qwen3-8B", hardware={"gpu_count": 1}, parallelism={"tp": 2})
    reason = describe_error(invalid.value)
    assert "needs 2 GPUs" in reason
    error = error_texts(localize(reason))
    assert error.title == "Cannot estimate" and error.message == reason and error.is_error
    assert error.caption == "the charts still show the last estimate" and error.color == theme.ERROR_COLOR
    with chinese():
        zh_pending, zh_error = pending_texts("org/model"), error_texts(localize(reason))
    assert zh_pending.title == "正在读取模型…" and zh_pending.message == "org/model: 正在读取其配置，随后给出估算"
    assert zh_error.title == "无法估算" and zh_error.caption == "图表仍显示上一次的估算"
    assert CJK.search(zh_error.message)


def test_gpu_chips() -> None:
    assert gpu_chips(view_of(plan())) is None
    zero3 = plan(
        "meta-llama/Llama-3.1-8B",
        "H100 SXM",
        hardware={"gpu_count": 8, "nodes": 2},
        parallelism={"zero": 3},
        workload={"kind": "finetune", "method": "full"},
    )
    view = view_of(zero3)
    g = view.per_gpu[0]
    color = theme.VERDICT_COLORS[g.verdict]
    square = f'<span style="color:{color}">&#9632;</span>&nbsp;'
    share = f"{gib(g.device_bytes)} ({g.fraction * 100:.0f}%)"
    assert gpu_chips(view) == f"{square}GPU 0–15 (each): {share}"
    tp2 = plan("Qwen/Qwen3-32B", workload={"engine": "vllm", "input_len": 4096}, hardware={"gpu_count": 2})
    tp2 = Scenario.model_validate({**tp2.model_dump(mode="json"), "parallelism": {"tp": 2}})
    two = view_of(tp2)
    chips = gpu_chips(two)
    assert chips is not None and chips.count("&nbsp;&nbsp;&nbsp; ") == len(presenter.gpu_groups(two.per_gpu)) - 1
    with chinese():
        assert gpu_chips(view) == f"{square}GPU 0–15（每块）: {share}"


# ---------------------------------------------------------------------------------------------- readouts


def test_readouts() -> None:
    view = view_of(plan())
    r = readouts(view)
    assert (r.allocated.caption, r.allocated.value) == ("Peak allocated", gib(view.peak_allocated_bytes))
    assert (r.reserved.caption, r.reserved.value) == ("Reserved", gib(view.peak_reserved_bytes))
    assert (r.device.caption, r.device.value) == ("On the device", gib(view.device_bytes))
    assert not r.host_visible and r.host.value == "–"
    assert r.params.value == presenter.count_text(view.params_total)
    assert r.active.value == presenter.count_text(view.estimate.params.active)
    engine = view.estimate.engine.engine
    assert r.device.note == accuracy_note(measured_accuracy("inference", engine, "device"))
    with chinese():
        zh = readouts(view)
    assert (zh.allocated.caption, zh.reserved.caption, zh.device.caption) == ("峰值已分配", "已保留", "设备占用")
    assert (zh.params.caption, zh.active.caption, zh.host.caption) == ("参数量", "激活 / 可训练", "每台机器的主机内存")


def test_readouts_of_an_offloading_and_an_uneven_plan() -> None:
    offload = plan(
        "meta-llama/Llama-3.1-8B",
        "H100 SXM",
        hardware={"gpu_count": 8},
        parallelism={"zero": 3, "offload": "optimizer"},
        workload={"kind": "finetune", "method": "full"},
    )
    view = view_of(offload)
    r = readouts(view)
    assert view.estimate.host_bytes > 0 and r.host_visible and r.host.value == gib(view.estimate.host_bytes)
    assert r.active.value == presenter.count_text(view.estimate.params.trainable)
    assert r.allocated.note == accuracy_note(measured_accuracy("finetune", "transformers", "allocated"))
    # llama.cpp splits the layers over 2 GPUs: the memory readouts are GPU 0's
    split = view_of(plan("Qwen/Qwen3-8B", workload={"engine": "llamacpp"}, hardware={"gpu_count": 2}))
    assert split.uneven
    assert readouts(split).allocated.caption == "Peak allocated · GPU 0"
    assert readouts(split).device.caption == "On the device · GPU 0"
    with chinese():
        assert readouts(split).reserved.caption == "已保留 · GPU 0"


def test_accuracy_note() -> None:
    assert accuracy_note(()) == (
        "No measured runs at this level for this kind of plan yet: the figure is modelled, not checked"
    )
    sets = measured_accuracy("finetune", "transformers", "allocated")
    assert sets
    note = accuracy_note(sets)
    s = sets[0]
    assert note.split("\n")[0] == "How far this figure was from measured runs it was not fitted to:"
    assert note.split("\n")[1] == (
        f"• {s.name}: median {s.median:.1f} %, 90th percentile {s.p90:.1f} % ({s.runs} comparisons)"
    )
    with chinese():
        zh = accuracy_note(sets)
        assert accuracy_note(()) == "此类方案在这一层级尚无实测运行：该数值来自模型推算，未经实测核对"
    assert zh.split("\n")[1].startswith(f"• {i18n.table('zh_CN')[s.name]}: 中位数 {s.median:.1f} %")


# ---------------------------------------------------------------------------------------------- legend, warnings


def test_legend_entries() -> None:
    view = view_of(plan())
    assert legend_entries(view) == list(view.colors.items())
    with chinese():
        zh = legend_entries(view)
    assert [c for _, c in zh] == list(view.colors.values())
    assert [n for n, _ in zh] == [localize_name(n, "zh_CN") for n in view.colors] and "权重" in [n for n, _ in zh]


def test_warnings_html() -> None:
    view = view_of(plan("Qwen/Qwen3-8B", workload={"engine": "vllm", "batch": 512, "input_len": 32000}))
    assert view.warnings
    text = warnings_html("plan.json: a <note>", view.warnings)
    lines = text.split("<br>")
    assert lines[0] == "&#9888;&nbsp;plan.json: a &lt;note&gt;"
    assert lines[1:] == [f"&#9888;&nbsp;{html.escape(w)}" for w in view.warnings]
    assert warnings_html(None, ()) == ""
    with chinese():
        zh = warnings_html(None, view.warnings)
    assert zh.split("<br>") == [f"&#9888;&nbsp;{html.escape(localize(w, 'zh_CN'))}" for w in view.warnings]
    assert "vLLM：KV 池" in zh


# ---------------------------------------------------------------------------------------------- display unit


def test_the_display_unit_is_one_object() -> None:
    view = view_of(plan())
    assert presenter.DISPLAY_UNIT.name == presenter.unit_name() == "GiB"
    assert gib(view.device_bytes) == f"{view.device_bytes / GIB:.2f} GiB"
    assert presenter.set_unit("GB") == "GB"
    assert presenter.DISPLAY_UNIT.name == "GB" and presenter.unit_bytes() == presenter.DISPLAY_UNIT.bytes == 10**9
    assert readouts(view).device.value == f"{view.device_bytes / 1e9:.2f} GB"
    assert presenter.set_unit("furlongs") == "GiB" and presenter.unit_bytes() == GIB


def test_an_engines_refusal_is_shown_in_its_words_not_as_a_shortfall_of_zero() -> None:
    from vramdesk.core.estimate import estimate

    def fit_of(**work: Any) -> Any:
        s = Scenario.model_validate(
            {"model": {"id": "meta-llama/Llama-3.1-8B"}, "workload": {"kind": "inference", **work},
             "hardware": {"gpu": "RTX 4090"}}
        )  # fmt: skip
        est = estimate(s, resolve_model(s.model.id), resolve_gpu("RTX 4090"))
        assert est.fit is not None and est.fit.verdict == "does not fit"
        return est.fit

    # vLLM starts only with room for one request of max_model_len: short by nothing, refused all the same
    refused = fit_of(engine="vllm", input_len=4096, vllm={"max_model_len": 100_000})
    shown = presenter.fit_message(refused)
    assert refused.short_bytes == 0 and getattr(shown, "id", "") == "vllm.start.one_request.set"
    assert "short by" not in shown
    # a plain shortfall is still the window's sentence, in its unit
    short = presenter.fit_message(fit_of(engine="transformers", input_len=131_000, batch=4))
    assert getattr(short, "id", "") == "view.fit.short" and "short by" in short
