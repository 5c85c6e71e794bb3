"""Checkpoint headers: tensor classification, stored parameter counts, local safetensors and GGUF files."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from fakehub import (
    TINY_CONFIG,
    gguf_bytes,
    llama_gguf,
    safetensors_bytes,
    shard,
    tiny_llama_tensors,
)

from vramdesk.core.checkpoint import CheckpointError, classify, stored_parameter_count, tensors_from_safetensors
from vramdesk.core.config_readers import normalize
from vramdesk.core.estimate import estimate
from vramdesk.core.gguf_header import GgufArray, gguf_to_config, parse_gguf_header, tensors_from_gguf
from vramdesk.core.scenario import Scenario
from vramdesk.services import local as local_reader
from vramdesk.services.catalog import default_catalog
from vramdesk.services.local import LocalModelError, read_gguf, read_model_folder, read_safetensors_header
from vramdesk.services.resolve import ResolveError, resolve_model


@pytest.fixture(autouse=True)
def _private_caches(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("VRAMDESK_CACHE_DIR", str(tmp_path / "vramdesk-cache"))


def _arch(model_id: str) -> Any:
    return normalize(default_catalog().config(model_id))


def _weights(facts: Any, **workload: Any) -> int:
    scenario = Scenario.model_validate({"model": {"id": facts.model_id}, "workload": {"kind": "inference", **workload}})
    est = estimate(scenario, facts)
    return next(c.bytes for c in est.phases[0].components if c.name == "weights")


# ---------------------------------------------------------------------------------------------- classification


@pytest.mark.parametrize(
    ("model", "name", "expected"),
    [
        ("Qwen/Qwen3-0.6B", "lm_head.weight", ("lm_head", "lm_head_copy", None)),
        ("Qwen/Qwen3-0.6B", "model.embed_tokens.weight", ("embedding", "text", None)),
        ("Qwen/Qwen3-0.6B", "model.layers.3.mlp.gate_proj.weight", ("mlp", "text", 3)),
        ("Qwen/Qwen3-0.6B", "model.layers.3.self_attn.q_norm.weight", ("norm", "text", 3)),
        ("Qwen/Qwen3-0.6B", "model.layers.27.self_attn.o_proj.weight", ("attn", "text", 27)),
        ("meta-llama/Llama-3.1-8B", "lm_head.weight", ("lm_head", "text", None)),
        ("deepseek-ai/DeepSeek-V3", "model.layers.61.eh_proj.weight", ("mtp_proj", "mtp", 61)),
        ("deepseek-ai/DeepSeek-V3", "model.layers.61.mlp.experts.3.up_proj.weight", ("expert", "mtp", 61)),
        ("deepseek-ai/DeepSeek-V3", "model.layers.5.mlp.experts.3.down_proj.weight", ("expert", "text", 5)),
        (
            "deepseek-ai/DeepSeek-V3",
            "model.layers.5.mlp.experts.3.down_proj.weight_scale_inv",
            ("quant_aux", "text", 5),
        ),
        ("deepseek-ai/DeepSeek-V3", "model.layers.5.mlp.gate.weight", ("router", "text", 5)),
        ("deepseek-ai/DeepSeek-V3", "model.layers.5.mlp.gate.e_score_correction_bias", ("bias", "text", 5)),
        ("deepseek-ai/DeepSeek-V3", "model.layers.5.mlp.shared_experts.up_proj.weight", ("shared_expert", "text", 5)),
        ("deepseek-ai/DeepSeek-V3", "model.layers.0.self_attn.kv_a_proj_with_mqa.weight", ("attn", "text", 0)),
        ("Qwen/Qwen3-Next-80B-A3B-Thinking", "mtp.layers.0.mlp.experts.1.up_proj.weight", ("expert", "mtp", 48)),
        ("Qwen/Qwen3-Next-80B-A3B-Thinking", "mtp.fc.weight", ("mtp_proj", "mtp", 48)),
        (
            "Qwen/Qwen3-Next-80B-A3B-Thinking",
            "model.layers.0.linear_attn.in_proj_qkvz.weight",
            ("linear_attn", "text", 0),
        ),
        ("Qwen/Qwen3-Next-80B-A3B-Thinking", "model.layers.0.linear_attn.conv1d.weight", ("conv", "text", 0)),
        ("Qwen/Qwen3-Next-80B-A3B-Thinking", "model.layers.0.linear_attn.A_log", ("state_param", "text", 0)),
        ("Qwen/Qwen3.5-27B", "model.visual.blocks.3.attn.qkv.weight", ("vision", "vision", None)),
        ("Qwen/Qwen3.5-27B", "model.visual.blocks.3.norm1.bias", ("norm", "vision", None)),
        ("Qwen/Qwen3.5-27B", "model.language_model.layers.2.mlp.up_proj.weight", ("mlp", "text", 2)),
        (
            "meta-llama/Llama-4-Scout-17B-16E-Instruct",
            "multi_modal_projector.linear_1.weight",
            ("vision", "vision", None),
        ),
        ("openai/gpt-oss-20b", "model.layers.1.mlp.experts.gate_up_proj_blocks", ("expert", "text", 1)),
        ("openai/gpt-oss-20b", "model.layers.1.mlp.experts.gate_up_proj_scales", ("quant_aux", "text", 1)),
        ("openai/gpt-oss-20b", "model.layers.1.mlp.router.weight", ("router", "text", 1)),
        ("openai/gpt-oss-20b", "model.layers.1.self_attn.sinks", ("attn", "text", 1)),
        ("meta-llama/Llama-3.1-8B", "blk.4.attn_q.weight", ("attn", "text", 4)),
        ("meta-llama/Llama-3.1-8B", "blk.4.ffn_down.weight", ("mlp", "text", 4)),
        ("meta-llama/Llama-3.1-8B", "blk.4.attn_norm.weight", ("norm", "text", 4)),
        ("meta-llama/Llama-3.1-8B", "token_embd.weight", ("embedding", "text", None)),
        ("meta-llama/Llama-3.1-8B", "output.weight", ("lm_head", "text", None)),
        ("Qwen/Qwen3-30B-A3B", "blk.4.ffn_gate_exps.weight", ("expert", "text", 4)),
        ("Qwen/Qwen3-30B-A3B", "blk.4.ffn_gate_inp.weight", ("router", "text", 4)),
    ],
)
def test_tensor_names_get_role_part_and_layer(model: str, name: str, expected: tuple[str, str, int | None]) -> None:
    assert classify(name, _arch(model)) == expected


def test_stored_lm_head_copy_is_not_loaded_and_is_noted(tmp_path: Path) -> None:
    cfg = dict(TINY_CONFIG, tie_word_embeddings=True)
    tensors = tiny_llama_tensors(cfg)
    tensors["lm_head.weight"] = ("BF16", (256, 64))  # stored although tied, as Qwen3-0.6B does
    (tmp_path / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    (tmp_path / "model.safetensors").write_bytes(safetensors_bytes(tensors))
    facts = resolve_model(str(tmp_path))
    loaded = sum(2 * _numel(s) for n, (_, s) in tensors.items() if n != "lm_head.weight")
    assert _weights(facts) == loaded
    assert facts.stored_total == sum(_numel(s) for _, s in tensors.values())
    assert any("also stores lm_head.weight" in n for n in facts.notes)


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


# ---------------------------------------------------------------------------------------------- parameter counts


def test_stored_parameter_count_unpacks_quantised_weights() -> None:
    gptq = {
        "m.layers.0.self_attn.q_proj.qweight": ("I32", (512 // 8, 512)),  # (in / 8, out), 4 bit
        "m.layers.0.self_attn.q_proj.qzeros": ("I32", (4, 512 // 8)),
        "m.layers.0.self_attn.q_proj.scales": ("F16", (4, 512)),
        "m.layers.0.self_attn.q_proj.g_idx": ("I32", (512,)),
        "m.layers.0.self_attn.q_proj.bias": ("F16", (512,)),
    }
    assert stored_parameter_count(gptq, {"quant_method": "gptq", "bits": 4}) == 512 * 512 + 512
    gptq8 = {"x.qweight": ("I32", (512 // 4, 512))}
    assert stored_parameter_count(gptq8, {"quant_method": "gptq", "bits": 8}) == 512 * 512
    awq = {"x.qweight": ("I32", (512, 512 // 8)), "x.qzeros": ("I32", (4, 64)), "x.scales": ("F16", (4, 512))}
    assert stored_parameter_count(awq, {"quant_method": "awq", "w_bit": 4}) == 512 * 512
    bnb = {
        "x.weight": ("U8", (512 * 512 // 2, 1)),
        "x.weight.absmax": ("F32", (4096,)),
        "x.weight.quant_map": ("F32", (16,)),
        "x.weight.quant_state.bitsandbytes__nf4": ("U8", (100,)),
        "norm.weight": ("BF16", (512,)),
    }
    assert stored_parameter_count(bnb) == 512 * 512 + 512
    mxfp4 = {"e.gate_up_proj_blocks": ("U8", (4, 64, 16, 16)), "e.gate_up_proj_scales": ("U8", (4, 64, 16))}
    assert stored_parameter_count(mxfp4) == 4 * 64 * 512
    fp8 = {"x.weight": ("F8_E4M3", (256, 256)), "x.weight_scale_inv": ("F32", (2, 2))}
    assert stored_parameter_count(fp8) == 256 * 256


def test_safetensors_tensors_carry_exact_bytes() -> None:
    arch = normalize(TINY_CONFIG)
    entries = {"model.layers.0.self_attn.q_proj.weight": ("F8_E4M3", (64, 64)), "model.norm.weight": ("F32", (64,))}
    out = {t.name: t for t in tensors_from_safetensors(entries, arch)}
    assert out["model.layers.0.self_attn.q_proj.weight"].stored_bytes == 4096
    assert out["model.norm.weight"].stored_bytes == 256
    with pytest.raises(CheckpointError, match="unknown safetensors dtype"):
        tensors_from_safetensors({"x": ("Q9", (2,))}, arch)


# ---------------------------------------------------------------------------------------------- safetensors files


def test_model_folder_with_sharded_safetensors_prices_stored_bytes(tmp_path: Path) -> None:
    tensors = tiny_llama_tensors()
    (tmp_path / "config.json").write_text(json.dumps(TINY_CONFIG), encoding="utf-8")
    for name, data in shard(tensors, 3).items():
        (tmp_path / name).write_bytes(data)
    model = read_model_folder(tmp_path)
    assert model.kind == "safetensors" and len(model.files) == 3
    assert model.safetensors == {k: (d, tuple(s)) for k, (d, s) in tensors.items()}
    facts = resolve_model(str(tmp_path))
    assert facts.checkpoint is not None and "3 files" in facts.checkpoint_source
    assert _weights(facts) == sum(2 * _numel(s) for _, s in tensors.values())
    assert facts.stored_total == facts.counts.checkpoint  # the config's inventory agrees with the headers
    (tmp_path / "model-00002-of-00003.safetensors").unlink()
    with pytest.raises(ResolveError, match=r"model-00002-of-00003\.safetensors.*missing"):
        resolve_model(str(tmp_path))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (struct.pack("<Q", 1000) + b"{}", "truncated"),
        (struct.pack("<Q", 1 << 40) + b"{}" * 8, "exceeds"),
        (struct.pack("<Q", 8) + b"{not js}", "not valid JSON"),
        (struct.pack("<Q", 8) + b"[1,2,3] ", "must be a JSON object"),
        (safetensors_bytes({"w": ("BF16", (64, 64))})[:-100], "incomplete download"),
        (b"abc", "too short"),
    ],
)
def test_bad_safetensors_headers_name_the_file(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes(data)
    with pytest.raises(LocalModelError, match=message) as exc:
        read_safetensors_header(path)
    assert str(path) in str(exc.value)


def test_folder_without_weights_falls_back_to_config(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(TINY_CONFIG), encoding="utf-8")
    facts = resolve_model(str(tmp_path))
    assert facts.checkpoint is None and any("no safetensors" in n for n in facts.notes)


# ---------------------------------------------------------------------------------------------- GGUF


def test_gguf_header_with_a_150k_vocabulary_reads_fast(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, _ = llama_gguf(vocab=150_016, wtype="Q4_K")
    path = tmp_path / "big-vocab.gguf"
    path.write_bytes(data)
    passes: list[int] = []  # bytes each parse pass walked
    parse = local_reader.parse_gguf_header
    monkeypatch.setattr(
        local_reader, "parse_gguf_header", lambda buf, **kw: passes.append(len(buf)) or parse(buf, **kw)
    )
    header, files = read_gguf(path)
    # fast by the work it does, not by the clock (~25 ms here; the gguf package's GGUFReader, which decodes every
    # token, needs seconds): a pass over the first read (one more if the header runs past it), and the vocabulary
    # skipped (its type and length only)
    assert len(passes) <= 2, passes
    assert isinstance(header.kv["tokenizer.ggml.tokens"], GgufArray)
    assert files == (path,)
    assert header.kv["tokenizer.ggml.tokens"].length == 150_016
    assert header.kv["llama.block_count"] == 2
    cfg = gguf_to_config(header)
    assert cfg["vocab_size"] == 150_016 and cfg["num_key_value_heads"] == 2 and not cfg["tie_word_embeddings"]
    arch = normalize(cfg)
    stored = tensors_from_gguf(header.entries(), arch)
    by_name = {t.name: t for t in stored}
    assert by_name["token_embd.weight"].shape == (150_016, 64)
    assert by_name["token_embd.weight"].stored_bytes == 150_016 * 64 // 256 * 144
    assert by_name["output.weight"].stored_dtype == "Q6_K"


def test_gguf_file_estimate_uses_the_stored_block_types(tmp_path: Path) -> None:
    data, tensors = llama_gguf(vocab=512, wtype="Q8_0")
    path = tmp_path / "tiny-Q8_0.gguf"
    path.write_bytes(data)
    facts = resolve_model(str(path))
    assert facts.checkpoint is not None and "GGUF header of tiny-Q8_0.gguf" in facts.checkpoint_source
    expected = sum(t.stored_bytes or 0 for t in facts.checkpoint)
    assert expected == sum(_numel(s) // 32 * 34 if ty == "Q8_0" else 4 * _numel(s) for ty, s in tensors.values())
    assert _weights(facts) == expected
    embd = 512 * 64 // 32 * 34
    assert _weights(facts, engine="llamacpp") == expected - embd  # llama.cpp keeps token_embd in host memory
    # the config derived from GGUF metadata gives the same inventory as the equivalent config.json
    hf = normalize(dict(TINY_CONFIG, vocab_size=512, max_position_embeddings=4096))
    assert facts.arch.n_layers == hf.n_layers and facts.counts.text == resolve_facts_text(hf)


def resolve_facts_text(arch: Any) -> int:
    from vramdesk.core.inventory import build_inventory, count_params

    return count_params(build_inventory(arch)).text


def test_gguf_split_files_are_read_together(tmp_path: Path) -> None:
    data, full = llama_gguf(tokens=False)
    items = list(full.items())
    base_kv = parse_gguf_header(data).kv
    first = gguf_bytes({**base_kv, "split.no": 0, "split.count": 2}, [(n, t, s) for n, (t, s) in items[:10]])
    second = gguf_bytes({"split.no": 1, "split.count": 2}, [(n, t, s) for n, (t, s) in items[10:]])
    (tmp_path / "m-00001-of-00002.gguf").write_bytes(first)
    (tmp_path / "m-00002-of-00002.gguf").write_bytes(second)
    header, files = read_gguf(tmp_path / "m-00001-of-00002.gguf")
    assert len(files) == 2 and {t.name for t in header.tensors} == set(full)
    (tmp_path / "m-00002-of-00002.gguf").unlink()
    with pytest.raises(LocalModelError, match="split file is missing"):
        read_gguf(tmp_path / "m-00001-of-00002.gguf")


def test_bad_gguf_files_get_clear_errors(tmp_path: Path) -> None:
    good, _ = llama_gguf(vocab=1000)
    cases = {
        "magic.gguf": (b"GGML" + good[4:], "bad magic"),
        "counts.gguf": (b"GGUF" + struct.pack("<IQQ", 3, 5, 10**12) + good[24:], "absurd"),
        "tensors.gguf": (b"GGUF" + struct.pack("<IQQ", 3, 10**9, 3) + good[24:], "absurd"),
        "short.gguf": (good[:5000], "truncated"),
        "nodata.gguf": (good[: len(good) - 64], "incomplete download"),
        "version.gguf": (b"GGUF" + struct.pack("<I", 1) + good[8:], "version 1"),
        "empty.gguf": (b"", "truncated"),
    }
    for name, (data, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(ResolveError, match=message) as exc:
            resolve_model(str(path))
        assert name in str(exc.value)


def test_gguf_metadata_to_config_for_other_families() -> None:
    def header(arch: str, extra: dict[str, Any], names: list[str]) -> Any:
        kv = {
            "general.architecture": arch,
            f"{arch}.embedding_length": 256,
            f"{arch}.block_count": 12,
            f"{arch}.feed_forward_length": 512,
            f"{arch}.attention.head_count": 4,
            f"{arch}.attention.head_count_kv": 1,
            f"{arch}.context_length": 8192,
            **extra,
        }
        tensors = [("token_embd.weight", "F16", (256, 1000))] + [(n, "F16", (256, 256)) for n in names]
        return parse_gguf_header(gguf_bytes(kv, tensors, data=False))

    qwen2 = gguf_to_config(header("qwen2", {}, ["blk.0.attn_q.bias", "output.weight"]))
    assert qwen2["model_type"] == "qwen2" and qwen2["attention_bias"] and not qwen2["tie_word_embeddings"]
    assert normalize(qwen2).qkv_bias
    g3 = gguf_to_config(
        header("gemma3", {"gemma3.attention.key_length": 64, "gemma3.attention.sliding_window": 512}, [])
    )
    arch = normalize(g3)
    assert g3["model_type"] == "gemma3_text" and arch.tie_embeddings
    assert [layer.attention.value for layer in arch.layers[:6]] == ["sliding"] * 5 + ["full"]
    g2 = gguf_to_config(header("gemma2", {"gemma2.attention.sliding_window": 4096}, []))
    assert normalize(g2).n_layers == 12
    moe = gguf_to_config(header("qwen3moe", {"qwen3moe.expert_count": 8, "qwen3moe.expert_used_count": 2}, []))
    assert normalize(moe).is_moe
    with pytest.raises(CheckpointError, match="'mamba' is not supported"):
        gguf_to_config(header("mamba", {}, []))
    with pytest.raises(CheckpointError, match="block_count"):
        gguf_to_config(header("llama", {"llama.block_count": 0}, []))
