"""The scenario options the form gained: peft modules_to_save, LoRA bias, adapter dtype, the vision tower, the FSDP
strategy, DeepSpeed's bucket and overlap_comm, and accelerate's max_memory for transformers inference.

Each option goes widget -> form values -> scenario -> core and back; every window test compares what the window
shows with the core's own estimate of the same scenario and checks the direction of the change.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from uiwindow import make_window

from vramdesk.core.estimate import estimate
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import FinetuneWorkload, InferenceWorkload, Parallelism, Scenario
from vramdesk.services.catalog import default_catalog
from vramdesk.storage.scenarios import save_scenario
from vramdesk.ui import i18n, qt_i18n, qtapp
from vramdesk.ui.forms import WorkloadForm, select
from vramdesk.ui.main_window import MainWindow
from vramdesk.ui.presenter import FormValues, form_from_scenario, scenario_from_form

FT_MODEL = "Qwen/Qwen3-4B"
VISION_MODEL = "Qwen/Qwen3.5-4B"
BIAS_MODEL = "Qwen/Qwen2.5-0.5B"
H100 = "H100 SXM"

NEW_FINETUNE = ("modules_to_save", "lora_bias", "adapter_dtype", "vision_tower")
NEW_PARALLEL = ("fsdp_strategy", "fsdp_version", "zero_bucket", "zero_overlap_comm")
NEW_INFERENCE = ("max_memory_gib", "cpu_memory_gib")


def finetune(model: str = FT_MODEL, gpus: int = 1, par: dict[str, object] | None = None, **work: object) -> Scenario:
    return Scenario.model_validate(
        {
            "model": {"id": model},
            "workload": {"kind": "finetune", "method": "lora", "seq_len": 2048, **work},
            "hardware": {"gpu": H100, "gpu_count": gpus},
            "parallelism": par or {},
        }
    )


def inference(model: str = "Qwen/Qwen3-8B", gpu: str = "RTX 4090", **work: object) -> Scenario:
    return Scenario.model_validate(
        {"model": {"id": model}, "workload": {"kind": "inference", **work}, "hardware": {"gpu": gpu}}
    )


def every_option_set() -> Scenario:
    """A fine-tuning scenario with every new fine-tuning and parallelism option away from its default."""
    return finetune(
        VISION_MODEL,
        gpus=4,
        par={
            "zero": 2,
            "fsdp": True,
            "fsdp_strategy": "hybrid",
            "fsdp_version": 2,
            "zero_bucket": 123_456_789,
            "zero_overlap_comm": False,
        },
        # the scenario's own order (lm_head first) survives the form, which writes embed first
        modules_to_save=("lm_head", "embed_tokens"),
        lora_bias="lora_only",
        adapter_dtype="base",
        vision_tower="trained",
    )


def core(s: Scenario) -> Estimate:
    cat = default_catalog()
    assert s.hardware.gpu is not None
    return estimate(s, cat.facts(s.model.id), cat.gpu(s.hardware.gpu))


def weights(est: Estimate) -> int:
    return next(c.bytes for c in est.components if c.name == "weights")


def shown(w: MainWindow) -> Estimate:
    ev = w.evaluation
    assert ev is not None and ev.view is not None, ev and ev.error
    return ev.view.estimate


def shown_scenario(w: MainWindow) -> Scenario:
    s = w.current_scenario()
    assert s is not None
    return s


def change(qtbot, w: MainWindow, action) -> Estimate:
    """Do ``action`` on the form and wait for the window's estimate of the result."""
    with qtbot.waitSignal(w.estimated, timeout=3000):
        action()
    return shown(w)


def pick(combo, value: object) -> None:
    i = combo.findData(value)
    assert i >= 0, value
    combo.setCurrentIndex(i)


# ---------------------------------------------------------------------------------------------- presenter


def test_the_form_defaults_are_the_core_defaults() -> None:
    form = FormValues(model=FT_MODEL)
    for name in NEW_FINETUNE:
        assert getattr(form, name) == getattr(FinetuneWorkload(), name), name
    for name in NEW_PARALLEL:
        assert getattr(form, name) == getattr(Parallelism(), name), name
    for name in NEW_INFERENCE:
        assert getattr(form, name) == getattr(InferenceWorkload(), name), name
    # a form with the defaults writes today's scenario exactly (saved scenarios keep their numbers)
    for s in (finetune(), inference(), finetune(gpus=4, par={"zero": 3})):
        assert scenario_from_form(s, form_from_scenario(s)) == s


def test_every_new_option_round_trips_through_the_presenter() -> None:
    s = every_option_set()
    form = form_from_scenario(s)
    assert (form.modules_to_save, form.lora_bias, form.adapter_dtype, form.vision_tower) == (
        ("lm_head", "embed"),
        "lora_only",
        "base",
        "trained",
    )
    assert (form.fsdp_strategy, form.fsdp_version, form.zero_bucket, form.zero_overlap_comm) == (
        "hybrid",
        2,
        123_456_789,
        False,
    )
    assert scenario_from_form(s, form) == s
    # the form writes the modules in its own order; the same set keeps the scenario's order
    assert scenario_from_form(s, form.replace(modules_to_save=("embed", "lm_head"))) == s
    inf = inference(max_memory_gib=10.5, cpu_memory_gib=0.0)  # 0 GiB of CPU memory: every spilled weight on disk
    back = scenario_from_form(inf, form_from_scenario(inf))
    assert back == inf and back.workload.cpu_memory_gib == 0.0  # type: ignore[union-attr]


def test_a_full_fine_tune_drops_the_adapter_only_options_the_core_rejects() -> None:
    s = finetune(modules_to_save=("embed",), lora_bias="all")
    form = form_from_scenario(s).replace(method="full")
    full = scenario_from_form(s, form)
    assert isinstance(full.workload, FinetuneWorkload)
    assert full.workload.method == "full" and full.workload.modules_to_save == () and full.workload.lora_bias == "none"
    # back to LoRA: the form still holds them
    assert scenario_from_form(full, form.replace(method="lora")).workload == s.workload


# ---------------------------------------------------------------------------------------------- the window


def test_every_new_option_round_trips_through_the_window(qtbot) -> None:
    s = every_option_set()
    w = make_window(qtbot, s)
    f = w.form
    assert f.check("modules_to_save", "embed").isChecked() and f.check("modules_to_save", "lm_head").isChecked()
    assert f.widget("lora_bias").currentData() == "lora_only" and f.widget("adapter_dtype").currentData() == "base"
    assert f.widget("vision_tower").currentData() == "trained" and f.widget("vision_tower").isEnabled()
    assert f.widget("fsdp_strategy").currentData() == "hybrid" and f.widget("zero_overlap_comm").currentData() is False
    assert f.widget("fsdp_version").currentData() == 2 and f.widget("fsdp_version").isEnabled()
    assert f.widget("zero_bucket").value() == 123_456_789
    assert scenario_from_form(s, f.values()) == s
    assert shown_scenario(w) == s

    inf = inference(max_memory_gib=10.5, cpu_memory_gib=0.0)
    w.set_scenario(inf)
    assert f.widget("max_memory_gib").value() == pytest.approx(10.5) and f.widget("cpu_memory_gib").value() == 0.0
    assert (
        f.widget("cpu_memory_gib").text() != f.widget("cpu_memory_gib").specialValueText()
    )  # 0 GiB is a value, not "no cap"
    assert scenario_from_form(inf, f.values()) == inf
    assert shown_scenario(w) == inf
    # and the defaults come back as the defaults ("no cap", "default")
    w.set_scenario(inference())
    assert f.values().max_memory_gib is None and f.values().cpu_memory_gib is None
    assert f.widget("max_memory_gib").text() == "no cap" and f.widget("cpu_memory_gib").text() == "no cap"
    assert shown_scenario(w) == inference()


def test_a_saved_scenario_with_the_options_opens_and_saves_them(qtbot, tmp_path: Path) -> None:
    s = every_option_set()
    path = tmp_path / "options.json"
    save_scenario(s, path)
    w = make_window(qtbot, finetune())
    assert w.open_scenario(path)
    assert shown_scenario(w) == s
    out = tmp_path / "saved.json"
    assert w.save_scenario(out)
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["workload"]["modules_to_save"] == ["lm_head", "embed"]
    assert data["parallelism"]["zero_bucket"] == 123_456_789 and data["parallelism"]["zero_overlap_comm"] is False


def test_modules_trained_in_full_raise_the_trainable_parameters_and_the_peak(qtbot) -> None:
    w = make_window(qtbot, finetune())
    f = w.form
    base = shown(w)
    assert base == core(finetune())
    embed = change(qtbot, w, lambda: f.check("modules_to_save", "embed").setChecked(True))
    assert embed == core(finetune(modules_to_save=("embed",)))
    both = change(qtbot, w, lambda: f.check("modules_to_save", "lm_head").setChecked(True))
    assert both == core(finetune(modules_to_save=("embed", "lm_head")))
    assert base.params.trainable < embed.params.trainable < both.params.trainable
    assert base.peak_allocated_bytes < embed.peak_allocated_bytes < both.peak_allocated_bytes
    assert shown_scenario(w).workload.modules_to_save == ("embed", "lm_head")  # type: ignore[union-attr]


def test_lora_bias_trains_the_biases(qtbot) -> None:
    w = make_window(qtbot, finetune(BIAS_MODEL))
    f = w.form
    base = shown(w)
    every = change(qtbot, w, lambda: pick(f.widget("lora_bias"), "all"))
    assert every == core(finetune(BIAS_MODEL, lora_bias="all"))
    assert every.params.trainable > base.params.trainable
    assert every.peak_allocated_bytes > base.peak_allocated_bytes
    adapted = change(qtbot, w, lambda: pick(f.widget("lora_bias"), "lora_only"))
    assert adapted == core(finetune(BIAS_MODEL, lora_bias="lora_only"))
    assert base.params.trainable < adapted.params.trainable <= every.params.trainable


def test_adapters_in_the_base_dtype_lower_the_weights(qtbot) -> None:
    w = make_window(qtbot, finetune())
    f = w.form
    base = shown(w)
    older = change(qtbot, w, lambda: pick(f.widget("adapter_dtype"), "base"))
    assert older == core(finetune(adapter_dtype="base"))
    assert weights(older) < weights(base)
    assert older.peak_allocated_bytes < base.peak_allocated_bytes


def test_the_vision_tower_option_follows_the_model(qtbot) -> None:
    w = make_window(qtbot, finetune(VISION_MODEL))
    f = w.form
    assert f.widget("vision_tower").isEnabled() and "has a vision tower" in f.widget("vision_tower").toolTip()
    frozen = shown(w)
    trained = change(qtbot, w, lambda: pick(f.widget("vision_tower"), "trained"))
    assert trained == core(finetune(VISION_MODEL, vision_tower="trained"))
    assert trained.params.trainable > frozen.params.trainable
    assert trained.peak_allocated_bytes > frozen.peak_allocated_bytes
    absent = change(qtbot, w, lambda: pick(f.widget("vision_tower"), "absent"))
    assert absent == core(finetune(VISION_MODEL, vision_tower="absent"))
    assert weights(absent) < weights(frozen)

    # a text-only model: the choice is disabled, and a "trained" left over from a multimodal model is not sent
    change(qtbot, w, lambda: pick(f.widget("vision_tower"), "trained"))
    text_only = change(qtbot, w, lambda: w.choose_model(FT_MODEL))
    assert not f.widget("vision_tower").isEnabled() and "no vision tower" in f.widget("vision_tower").toolTip()
    assert text_only == core(finetune())
    assert shown_scenario(w).workload.vision_tower == "frozen"  # type: ignore[union-attr]
    back = change(qtbot, w, lambda: w.choose_model(VISION_MODEL))
    assert f.widget("vision_tower").isEnabled() and back == core(finetune(VISION_MODEL))


def test_a_model_outside_the_catalog_keeps_the_vision_choice_open(qtbot) -> None:
    qtapp.ensure_app()
    f = WorkloadForm(default_catalog())  # the form alone: no window that would look the models up
    qtbot.addWidget(f)
    f.set_values(form_from_scenario(finetune()))
    assert f.model_has_vision("someone/not-in-the-catalog") is None
    assert f.model_has_vision(VISION_MODEL) is True and f.model_has_vision(FT_MODEL) is False
    # a model resolved elsewhere (Hub, local folder): once its facts are noted, the choice follows them
    select(f.model_combo, "someone/text-only")
    assert f.widget("vision_tower").isEnabled() and "cannot tell" in f.widget("vision_tower").toolTip()
    f.note_model_facts("someone/text-only", default_catalog().facts(FT_MODEL))
    assert not f.widget("vision_tower").isEnabled() and f.model_has_vision("someone/text-only") is False
    f.note_model_facts("someone/multimodal", default_catalog().facts(VISION_MODEL))
    select(f.model_combo, "someone/multimodal")
    assert f.widget("vision_tower").isEnabled() and f.model_has_vision("someone/multimodal") is True


def test_shard_grad_op_keeps_whole_parameters_on_every_gpu(qtbot) -> None:
    w = make_window(qtbot, finetune(gpus=4, method="full"))
    f = w.form
    assert not f.widget("fsdp_strategy").isEnabled()
    full = change(qtbot, w, lambda: f.widget("fsdp").setChecked(True))
    assert f.widget("fsdp_strategy").isEnabled() and f.widget("fsdp_strategy").currentData() == "full"
    assert full == core(finetune(gpus=4, method="full", par={"fsdp": True}))
    grad_op = change(qtbot, w, lambda: pick(f.widget("fsdp_strategy"), "shard-grad-op"))
    assert grad_op == core(finetune(gpus=4, method="full", par={"fsdp": True, "fsdp_strategy": "shard-grad-op"}))
    assert weights(grad_op) > weights(full)
    assert grad_op.peak_allocated_bytes > full.peak_allocated_bytes
    # FSDP off: the strategy is disabled but kept (it comes back with FSDP)
    change(qtbot, w, lambda: f.widget("fsdp").setChecked(False))
    assert not f.widget("fsdp_strategy").isEnabled() and f.widget("fsdp_strategy").currentData() == "shard-grad-op"


def test_fsdp2_lowers_lora_activations_in_the_window(qtbot) -> None:
    lora_qv = {"lora_targets": ("q", "v"), "grad_checkpointing": True}
    w = make_window(qtbot, finetune(gpus=4, par={"fsdp": True}, **lora_qv))
    f = w.form
    assert f.widget("fsdp_version").isEnabled() and f.widget("fsdp_version").currentData() == 1
    v1 = shown(w)
    v2 = change(qtbot, w, lambda: pick(f.widget("fsdp_version"), 2))
    assert v2 == core(finetune(gpus=4, par={"fsdp": True, "fsdp_version": 2}, **lora_qv))

    def acts(e: Estimate) -> int:
        return next(
            c.bytes
            for p in e.phases
            if p.name == "backward (recompute)"
            for c in p.components
            if c.name == "activations"
        )

    assert acts(v2) < acts(v1)
    change(qtbot, w, lambda: f.widget("fsdp").setChecked(False))
    assert not f.widget("fsdp_version").isEnabled() and f.widget("fsdp_version").currentData() == 2


def test_deepspeed_bucket_and_overlap_comm(qtbot) -> None:
    w = make_window(qtbot, finetune(gpus=4, method="full"))
    f = w.form
    assert not f.widget("zero_bucket").isEnabled() and not f.widget("zero_overlap_comm").isEnabled()
    assert f.widget("zero_bucket").text() == "default (5e8)"
    default = change(qtbot, w, lambda: pick(f.widget("zero"), 2))
    assert f.widget("zero_bucket").isEnabled() and f.widget("zero_overlap_comm").isEnabled()
    assert default == core(finetune(gpus=4, method="full", par={"zero": 2}))
    small = change(qtbot, w, lambda: f.widget("zero_bucket").setValue(10_000_000))
    assert small == core(finetune(gpus=4, method="full", par={"zero": 2, "zero_bucket": 10_000_000}))
    assert small.peak_allocated_bytes < default.peak_allocated_bytes
    big = change(qtbot, w, lambda: f.widget("zero_bucket").setValue(1_000_000_000))
    assert big.peak_allocated_bytes > default.peak_allocated_bytes
    # overlap_comm keeps a second bucket (ZeRO-2's default is off)
    on = change(qtbot, w, lambda: pick(f.widget("zero_overlap_comm"), True))
    par = {"zero": 2, "zero_bucket": 1_000_000_000, "zero_overlap_comm": True}
    assert on == core(finetune(gpus=4, method="full", par=par))
    assert on.peak_allocated_bytes > big.peak_allocated_bytes
    off = change(qtbot, w, lambda: pick(f.widget("zero_overlap_comm"), False))
    assert off.peak_allocated_bytes == big.peak_allocated_bytes
    assert shown_scenario(w).parallelism.zero_overlap_comm is False
    # ZeRO off: both disabled again
    change(qtbot, w, lambda: pick(f.widget("zero"), 0))
    assert not f.widget("zero_bucket").isEnabled() and not f.widget("zero_overlap_comm").isEnabled()


def test_max_memory_per_gpu_spills_weights_to_cpu_memory(qtbot) -> None:
    w = make_window(qtbot, inference())
    f = w.form
    base = shown(w)
    assert base.host_bytes == 0 and not any("CPU memory" in x for x in base.warnings)
    assert (
        f.engine_boxes["device_map"].isVisible()
        and f.widget("max_memory_gib").isEnabled()
        and not f.widget("cpu_memory_gib").isEnabled()
    )
    capped = change(qtbot, w, lambda: f.widget("max_memory_gib").setValue(10.0))
    assert capped == core(inference(max_memory_gib=10.0))
    assert weights(capped) < weights(base) and capped.peak_allocated_bytes < base.peak_allocated_bytes
    assert capped.host_bytes > 0
    assert any("CPU memory" in x for x in capped.warnings)
    assert "CPU memory" in w.warnings_label.text() and w.warnings_label.isVisible()
    # a CPU cap below what spills sends the rest to disk: less host memory, a disk warning
    assert f.widget("cpu_memory_gib").isEnabled()
    disk = change(qtbot, w, lambda: f.widget("cpu_memory_gib").setValue(2.0))
    assert disk == core(inference(max_memory_gib=10.0, cpu_memory_gib=2.0))
    assert 0 < disk.host_bytes < capped.host_bytes and any("disk" in x for x in disk.warnings)
    back = change(qtbot, w, lambda: f.widget("max_memory_gib").setValue(0.0))
    assert f.widget("max_memory_gib").text() == "no cap" and not f.widget("cpu_memory_gib").isEnabled()
    assert back.host_bytes == 0 and weights(back) == weights(base)


def test_max_memory_is_a_transformers_setting(qtbot) -> None:
    w = make_window(qtbot, inference(max_memory_gib=10.0))
    f = w.form
    assert f.widget("max_memory_gib").isEnabled()
    change(qtbot, w, lambda: pick(f.widget("engine"), "vllm"))
    assert (
        not f.widget("max_memory_gib").isEnabled()
        and not f.widget("cpu_memory_gib").isEnabled()
        and not f.engine_boxes["device_map"].isVisible()
    )
    change(qtbot, w, lambda: pick(f.widget("engine"), "llamacpp"))
    assert not f.widget("max_memory_gib").isEnabled()
    change(qtbot, w, lambda: pick(f.widget("engine"), "transformers"))
    assert f.widget("max_memory_gib").isEnabled() and f.widget("max_memory_gib").value() == pytest.approx(10.0)


def test_a_full_fine_tune_disables_the_adapter_options(qtbot) -> None:
    w = make_window(qtbot, finetune(modules_to_save=("embed",), lora_bias="all"))
    f = w.form
    adapter_only = (
        f.check("modules_to_save", "embed"),
        f.check("modules_to_save", "lm_head"),
        f.widget("lora_bias"),
        f.widget("adapter_dtype"),
    )
    assert all(x.isEnabled() for x in adapter_only)
    full = change(qtbot, w, lambda: pick(f.widget("method"), "full"))
    assert not any(x.isEnabled() for x in adapter_only)
    # the core rejects modules_to_save and lora_bias for a full fine-tune: the window sends neither
    assert full == core(finetune(method="full"))
    work = shown_scenario(w).workload
    assert isinstance(work, FinetuneWorkload) and work.modules_to_save == () and work.lora_bias == "none"
    change(qtbot, w, lambda: pick(f.widget("method"), "qlora"))
    assert all(x.isEnabled() for x in adapter_only) and f.check("modules_to_save", "embed").isChecked()
    assert shown_scenario(w).workload.modules_to_save == ("embed",)  # type: ignore[union-attr]


def test_the_new_widgets_explain_themselves_in_both_languages(qtbot, monkeypatch) -> None:
    w = make_window(qtbot, finetune(VISION_MODEL))
    f = w.form
    new = (
        f.check("modules_to_save", "embed"),
        f.check("modules_to_save", "lm_head"),
        f.widget("lora_bias"),
        f.widget("adapter_dtype"),
        f.widget("vision_tower"),
        f.widget("fsdp_strategy"),
        f.widget("zero_bucket"),
        f.widget("zero_overlap_comm"),
        f.widget("max_memory_gib"),
        f.widget("cpu_memory_gib"),
    )
    for widget in new:
        assert widget.toolTip() and widget.accessibleName(), widget
    for combo in (
        f.widget("lora_bias"),
        f.widget("adapter_dtype"),
        f.widget("vision_tower"),
        f.widget("fsdp_strategy"),
        f.widget("zero_overlap_comm"),
    ):
        for i in range(combo.count()):
            assert combo.itemData(i, Qt.ItemDataRole.ToolTipRole), (combo.accessibleName(), combo.itemText(i))
    # tab order: the new fine-tuning fields come between LoRA dropout and DoRA, in the order they are shown
    order = [
        f.widget("lora_dropout"),
        f.widget("lora_bias"),
        f.check("modules_to_save", "embed"),
        f.check("modules_to_save", "lm_head"),
        f.widget("adapter_dtype"),
    ]
    assert _tab_order(f.widget("lora_dropout"), order) == order
    order = [f.widget("activation_offload"), f.widget("vision_tower")]
    assert _tab_order(f.widget("activation_offload"), order) == order
    order = [
        f.widget("zero"),
        f.widget("zero_bucket"),
        f.widget("zero_overlap_comm"),
        f.widget("fsdp"),
        f.widget("fsdp_strategy"),
        f.widget("offload"),
    ]
    assert _tab_order(f.widget("zero"), order) == order
    order = [f.widget("kv_dtype"), f.widget("max_memory_gib"), f.widget("cpu_memory_gib")]
    assert _tab_order(f.widget("kv_dtype"), order) == order
    width = w.form_scroll.viewport().width()
    assert f.minimumSizeHint().width() <= width  # nothing is cut off on the right

    monkeypatch.setenv("VRAMDESK_LANG", "zh_CN")
    i18n.set_language(qt_i18n.choose_language())
    try:
        zh = make_window(qtbot, finetune(VISION_MODEL))
        g = zh.form
        assert g.widget("vision_tower").itemText(g.widget("vision_tower").findData("absent")) == "不加载"
        assert (
            g.widget("lora_bias").accessibleName() == "LoRA 偏置"
            and g.widget("max_memory_gib").specialValueText() == "不限"
        )
        assert g.minimumSizeHint().width() <= zh.form_scroll.viewport().width()
    finally:
        i18n.set_language("en")


def _tab_order(start, widgets):
    """``widgets`` in the order Tab reaches them from ``start`` (one lap of the focus chain)."""
    seen = [start]
    nxt = start.nextInFocusChain()
    while nxt is not start and len(seen) < len(widgets):
        if nxt in widgets and nxt not in seen:
            seen.append(nxt)
        nxt = nxt.nextInFocusChain()
    return seen


def test_switching_the_language_keeps_the_new_options(qtbot) -> None:
    s = every_option_set()
    w = make_window(qtbot, s)
    try:
        w._set_language("zh_CN")
        f = w.form  # a new form, built in Chinese
        assert (
            f.widget("vision_tower").currentText() == "训练" and f.widget("fsdp_strategy").currentText() == "混合分片"
        )
        assert shown_scenario(w) == s
        w._set_language("en")
        assert w.form.widget("lora_bias").currentText() == "LoRA layers only" and shown_scenario(w) == s
    finally:
        i18n.set_language("en")
        qt_i18n.install_qt_translations("en")


def test_selective_checkpointing_and_llama_cpp_row_split_in_the_form(qtbot) -> None:
    s = finetune("meta-llama/Llama-3.1-8B", method="full", seq_len=4096)
    assert scenario_from_form(s, form_from_scenario(s)) == s
    w = make_window(qtbot, s)
    f = w.form
    every = shown(w)
    half = change(qtbot, w, lambda: f.widget("checkpoint_every").setValue(2))
    assert half == core(finetune("meta-llama/Llama-3.1-8B", method="full", seq_len=4096, checkpoint_every=2))
    assert half.peak_allocated_bytes >= every.peak_allocated_bytes
    change(qtbot, w, lambda: f.widget("grad_checkpointing").setChecked(False))
    assert not f.widget("checkpoint_every").isEnabled()

    llama = inference("meta-llama/Llama-3.1-70B", engine="llamacpp", input_len=8192)
    w2 = make_window(qtbot, llama.model_copy(update={"weights": "q4_k_m"}))
    f2 = w2.form
    assert not f2.widget("split_mode").isEnabled()  # one GPU: nothing to split
    change(qtbot, w2, lambda: f2.widget("gpu_count").setValue(3))
    assert f2.widget("split_mode").isEnabled()
    row = change(qtbot, w2, lambda: pick(f2.widget("split_mode"), "row"))
    sent = w2.evaluation.scenario if w2.evaluation is not None else None
    assert sent is not None and sent.workload.llamacpp.split_mode == "row"  # type: ignore[union-attr]
    assert row == core(sent)
    kv = [next((c.bytes for c in g.components if c.name == "KV cache"), 0) for g in row.per_gpu]
    assert kv[0] > 0 and kv[1:] == [0, 0]
