"""An unknown model type in a local folder (config.json + model.safetensors) or on the Hub is estimated from its
tensor names: the services pass the safetensors headers, the CLI and the window show the "approximate" warning."""

from __future__ import annotations

import html
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakehub import FakeHub, hub_environment, safetensors_bytes

from vramdesk.cli import main
from vramdesk.services.cache import AnswerCache
from vramdesk.services.hub import HubClient
from vramdesk.services.resolve import ResolveError, resolve_model

H, LAYERS, EXPERTS, INTER, VOCAB = 64, 3, 4, 32, 256
CONFIG = {
    "model_type": "mystery_moe",
    "hidden_size": H,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": LAYERS,
    "vocab_size": VOCAB,
    "num_experts_per_tok": 2,
    "torch_dtype": "bfloat16",
}


def tensors() -> dict[str, tuple[str, tuple[int, ...]]]:
    t: dict[str, tuple[str, tuple[int, ...]]] = {"transformer.wte.weight": ("BF16", (VOCAB, H))}
    for i in range(LAYERS):
        p = f"transformer.h.{i}"
        t[f"{p}.ln_1.weight"] = ("BF16", (H,))
        t[f"{p}.ln_2.weight"] = ("BF16", (H,))
        t[f"{p}.attn.q_proj.weight"] = ("BF16", (H, H))
        t[f"{p}.attn.k_proj.weight"] = ("BF16", (32, H))
        t[f"{p}.attn.v_proj.weight"] = ("BF16", (32, H))
        t[f"{p}.attn.o_proj.weight"] = ("BF16", (H, H))
        t[f"{p}.moe.gate.weight"] = ("BF16", (EXPERTS, H))
        for e in range(EXPERTS):
            for n, shape in (("gate_proj", (INTER, H)), ("up_proj", (INTER, H)), ("down_proj", (H, INTER))):
                t[f"{p}.moe.experts.{e}.{n}.weight"] = ("BF16", shape)
    t["transformer.ln_f.weight"] = ("BF16", (H,))
    t["lm_head.weight"] = ("BF16", (VOCAB, H))
    return t


TOTAL = VOCAB * H * 2 + LAYERS * (2 * H + 2 * H * H + 2 * 32 * H + EXPERTS * H + EXPERTS * 3 * INTER * H) + H
ACTIVE = TOTAL - LAYERS * EXPERTS * 3 * INTER * H // 2


def write_folder(root: Path) -> Path:
    root.mkdir()
    (root / "config.json").write_text(json.dumps(CONFIG), encoding="utf-8")
    (root / "model.safetensors").write_bytes(safetensors_bytes(tensors()))
    return root


def test_a_local_folder_of_an_unknown_type_is_read_from_its_tensor_names(tmp_path: Path) -> None:
    facts = resolve_model(str(write_folder(tmp_path / "mystery")))
    assert facts.counts.checkpoint == facts.stored_total == TOTAL
    assert facts.counts.active == ACTIVE
    assert facts.arch.warnings[0].startswith("approximate: unknown architecture 'mystery_moe'")
    assert "every tensor placed" in facts.arch.warnings[0]
    assert not any("stores" in n and "inventory counts" in n for n in facts.notes)  # no mismatch to report


def test_the_cli_estimates_the_folder_with_the_warning(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "mystery")
    out = io.StringIO()
    assert main(["estimate", str(folder), "--json"], out=out) == 0
    data = json.loads(out.getvalue())
    assert data["params"]["total"] == TOTAL and data["params"]["active"] == ACTIVE
    said = "inferred from tensor names (60 tensors, 3 decoder layers, 3 with attention)"
    assert any(said in w for w in data["warnings"])
    kv = next(c for c in data["components"] if c["category"] == "kv_cache")
    assert "3 full layers x 2 kv heads" in kv["explain"]


def test_a_folder_whose_config_and_names_both_say_too_little_is_refused_naming_both(tmp_path: Path) -> None:
    folder = tmp_path / "bare"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "bare", "hidden_size": 64}), encoding="utf-8")
    (folder / "model.safetensors").write_bytes(safetensors_bytes(tensors()))
    with pytest.raises(ResolveError) as err:
        resolve_model(str(folder))
    message = str(err.value)
    assert "neither num_attention_heads nor head_dim" in message and "num_hidden_layers" in message


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeHub]:
    with hub_environment(monkeypatch, tmp_path) as fake:
        yield fake


def test_an_unknown_type_on_the_hub_is_read_from_its_header_by_ranged_reads(hub: FakeHub, tmp_path: Path) -> None:
    files = {"config.json": json.dumps(CONFIG), "model.safetensors": safetensors_bytes(tensors())}
    hub.add_model("acme/mystery", files=files)
    answers = AnswerCache(tmp_path / "answers")
    facts = resolve_model(
        "acme/mystery", client=HubClient(token=False, timeout=3.0), cache_dir=tmp_path / "hf", answers=answers
    )
    assert (facts.counts.checkpoint, facts.counts.active) == (TOTAL, ACTIVE)
    assert "inferred from tensor names" in facts.arch.warnings[0]
    # offline, from the saved answers: the same inventory
    again = resolve_model("acme/mystery", client=HubClient(offline=True), cache_dir=tmp_path / "hf", answers=answers)
    assert (again.counts.checkpoint, again.counts.active) == (TOTAL, ACTIVE)


@pytest.mark.ui
def test_the_window_shows_the_warning_for_the_folder(qtbot, tmp_path: Path) -> None:
    from uiwindow import make_window

    folder = write_folder(tmp_path / "mystery")
    w = make_window(qtbot)
    w.choose_model(str(folder))
    qtbot.waitUntil(lambda: "inferred from tensor names" in w.warnings_label.text() and not w.pending, timeout=10_000)
    assert "mystery_moe" in w.warnings_label.text()


@pytest.mark.ui
def test_the_window_shows_the_warning_in_chinese(qtbot, chinese, tmp_path: Path) -> None:
    from uiwindow import make_window

    folder = write_folder(tmp_path / "mystery")
    w = make_window(qtbot)
    w.choose_model(str(folder))
    qtbot.waitUntil(lambda: "由张量名称推断" in w.warnings_label.text() and not w.pending, timeout=10_000)
    text = html.unescape(w.warnings_label.text())
    assert "近似值：未知架构 'mystery_moe'，由张量名称推断（60 个张量" in text and "所有张量均已识别" in text
    assert "inferred from tensor names" not in text
