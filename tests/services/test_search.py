"""Search (catalog + HF cache + Hub) and resolving Hub-only models end to end, online and then offline."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakehub import (
    COMMIT,
    TINY_CONFIG,
    FakeHub,
    hub_environment,
    llama_gguf,
    safetensors_bytes,
    shard,
    tiny_llama_tensors,
)

from vramdesk.cli import main
from vramdesk.services import cache as hf_cache
from vramdesk.services.cache import AnswerCache, cached_models, find_cached
from vramdesk.services.hub import HubClient
from vramdesk.services.resolve import ResolveError, resolve_model, split_ref
from vramdesk.services.search import SearchResult, hub_results, local_results, merge

#: a Hub-only model: not in the catalog; FP8 MLP weights with scales, so stored bytes differ from a formula
FP8_CONFIG = dict(TINY_CONFIG, hidden_size=128, intermediate_size=256, vocab_size=512)


def _fp8_tensors() -> dict[str, tuple[str, tuple[int, ...]]]:
    t = tiny_llama_tensors(FP8_CONFIG)
    for name in list(t):
        if ".mlp." in name:
            _, shape = t[name]
            t[name] = ("F8_E4M3", shape)
            t[name + "_scale_inv"] = ("F32", (shape[0] // 128 or 1, shape[1] // 128 or 1))
    return t


def _stored_bytes(tensors: dict[str, tuple[str, tuple[int, ...]]]) -> int:
    size = {"BF16": 2, "F32": 4, "F8_E4M3": 1}
    total = 0
    for dtype, shape in tensors.values():
        n = size[dtype]
        for d in shape:
            n *= d
        total += n
    return total


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeHub]:
    with hub_environment(monkeypatch, tmp_path) as fake:
        fake.add_model(
            "newlab/Nimbus-7B-Instruct",
            info={"downloads": 1234, "safetensors": {"parameters": {"BF16": 1, "F8_E4M3": 2}, "total": 3}},
            files={"config.json": json.dumps(FP8_CONFIG), **shard(_fp8_tensors(), 2)},
        )
        fake.add_model("Qwen/Qwen3-8B", info={"downloads": 999_999})  # also in the catalog
        fake.add_model("newlab/Nimbus-GGUF", files={"nimbus-Q8_0.gguf": llama_gguf(vocab=512)[0]})
        fake.add_model("newlab/Gated-Nimbus", info={"gated": "auto"}, files={"config.json": json.dumps(TINY_CONFIG)})
        fake.gated.add("newlab/Gated-Nimbus")
        yield fake


def cli(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    import io

    buf = io.StringIO()
    code = main(list(args), out=buf)
    return code, buf.getvalue(), capsys.readouterr().err


def _weights(data: dict[str, object]) -> int:
    phases = data["phases"]
    assert isinstance(phases, list)
    return next(c["bytes"] for c in phases[0]["components"] if c["name"] == "weights")


# ---------------------------------------------------------------------------------------------- search


def _fake_hf_cache(root: Path, repo: str, files: dict[str, bytes]) -> Path:
    folder = root / ("models--" + repo.replace("/", "--"))
    snap = folder / "snapshots" / COMMIT
    snap.mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(COMMIT, encoding="utf-8")
    for name, data in files.items():
        (snap / name).write_bytes(data)
    return snap


def test_local_results_are_instant_and_badged(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cache = tmp_path / "hf"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("VRAMDESK_CACHE_DIR", str(tmp_path / "vd"))
    for i in range(200):  # a well-used cache
        _fake_hf_cache(cache, f"org{i}/model-{i}", {"config.json": b"{}"})
    _fake_hf_cache(cache, "someone/qwen-32b-finetune", {"config.json": b"{}", "model.safetensors": b""})
    _fake_hf_cache(cache, "someone/no-config", {"README.md": b""})
    AnswerCache().save_model("lab/qwen-32b-looked-at", "https://x", summary={"params": 32_000_000_000})
    local_results("warm up")
    # instant by the work it does, not by the clock: once warm, a search reads none of the 202 cached repos again
    read: list[str] = []
    read_repo = hf_cache._cached
    monkeypatch.setattr(hf_cache, "_cached", lambda repo, folder: read.append(repo) or read_repo(repo, folder))
    results = local_results("qwen 32b")
    assert read == []
    ids = [r.id for r in results]
    assert ids[:2] == ["Qwen/Qwen3-32B", "Qwen/Qwen2.5-32B"]
    badge = {r.id: r.source for r in results}
    assert badge["Qwen/Qwen3-32B"] == "catalog"
    assert badge["someone/qwen-32b-finetune"] == "cache" and badge["lab/qwen-32b-looked-at"] == "cache"
    assert find_cached("someone/no-config") is None
    assert {m.id for m in cached_models()} >= {"someone/qwen-32b-finetune", "org7/model-7"}
    exact = local_results("Qwen/Qwen3-8B")
    assert exact[0].id == "Qwen/Qwen3-8B"


def test_merge_deduplicates_and_ranks() -> None:
    cat = SearchResult("Qwen/Qwen3-8B", "catalog", ("catalog",), params=8)
    hub = [
        SearchResult("qwen/qwen3-8b", "hub", ("hub",), downloads=10, gated=False),
        SearchResult("Other/Qwen3-8B-GGUF", "hub", ("hub",), downloads=1_000_000),
        SearchResult("Other/my-qwen3-8b", "hub", ("hub",), downloads=5_000_000),
    ]
    merged = merge("qwen3-8b", [cat], hub)
    assert [r.id for r in merged] == ["Qwen/Qwen3-8B", "Other/Qwen3-8B-GGUF", "Other/my-qwen3-8b"]
    assert merged[0].sources == ("catalog", "hub") and merged[0].downloads == 10 and merged[0].params == 8


def test_hub_search_is_saved_for_offline_use(hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    answer = hub_results("nimbus", client=HubClient(token=False))
    assert answer.error is None and [r.id for r in answer.results][:1] == ["newlab/Nimbus-7B-Instruct"]
    assert answer.results[0].source == "hub" and answer.results[0].params == 3
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    offline = hub_results("nimbus")
    assert offline.stale and offline.error is not None and offline.error.kind == "offline"
    assert "saved" in offline.note and offline.results[0].id == "newlab/Nimbus-7B-Instruct"
    nothing = hub_results("never searched")
    assert not nothing.results and "catalog and cache only" in nothing.note


def test_cli_search_json_merges_catalog_and_hub(hub: FakeHub, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli("search", "qwen3 8b", "--json", capsys=capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["hub"]["ok"] and doc["results"][0]["id"] == "Qwen/Qwen3-8B"
    assert doc["results"][0]["sources"] == ["catalog", "hub"] and doc["results"][0]["downloads"] == 999_999
    code, out, err = cli("search", "nimbus", "--limit", "5", capsys=capsys)
    assert code == 0 and "[hub    ] newlab/Nimbus-7B-Instruct" in out
    hub.fail["^/api/models$"] = (503, "")
    code, out, err = cli("search", "qwen3 8b", capsys=capsys)
    assert code == 0 and "[catalog] Qwen/Qwen3-8B" in out and "note:" in err and "503" in err


# ---------------------------------------------------------------------------------------------- resolve + estimate


def test_estimate_a_hub_only_model_from_its_stored_tensors(
    hub: FakeHub, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_secret_test_token_123")  # the user's token, as huggingface_hub finds it
    code, out, err = cli("estimate", "newlab/Nimbus-7B-Instruct", "--json", capsys=capsys)
    assert code == 0, err
    assert any(h.get("authorization") == "Bearer hf_secret_test_token_123" for *_, h in hub.log)
    written = [p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()]
    assert written and not any(b"hf_secret_test_token_123" in data for data in written)
    assert "hf_secret" not in out + err
    data = json.loads(out)
    tensors = _fp8_tensors()
    assert _weights(data) == _stored_bytes(tensors)  # exact: FP8 MLPs, their scales, BF16 the rest
    params = sum(_numel(s) for name, (_, s) in tensors.items() if not name.endswith("_scale_inv"))
    assert data["params"]["checkpoint_total"] == params  # scales are stored bytes, not parameters
    assert any(
        "safetensors headers of newlab/Nimbus-7B-Instruct on the Hub (2 files)" in n for n in data["params"]["notes"]
    )
    # offline afterwards: config from the HF cache, headers from the answer cache, no request
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub.log.clear()
    code, out, err = cli("estimate", "newlab/Nimbus-7B-Instruct", "--json", capsys=capsys)
    assert code == 0, err
    assert hub.log == []
    assert _weights(json.loads(out)) == _stored_bytes(tensors)
    # and it is found by search, offline, as a model looked at before
    assert "newlab/Nimbus-7B-Instruct" in [r.id for r in local_results("nimbus")]
    assert [r["id"] for r in AnswerCache().recent()][:1] == ["newlab/Nimbus-7B-Instruct"]


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def test_gguf_repo_resolves_through_its_header(hub: FakeHub, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli("estimate", "newlab/Nimbus-GGUF:Q8_0", "--engine", "llamacpp", "--json", capsys=capsys)
    assert code == 0, err
    notes = json.loads(out)["params"]["notes"]
    assert any("GGUF header of newlab/Nimbus-GGUF/nimbus-Q8_0.gguf" in n for n in notes)
    facts = resolve_model("newlab/Nimbus-GGUF")  # no config.json: the repo's GGUF file is used
    assert facts.checkpoint is not None and facts.arch.vocab == 512
    assert split_ref("a/b/c/d.gguf") == ("a/b", None, "c/d.gguf") and split_ref("a/b:Q4_K_M") == ("a/b", "Q4_K_M", None)


def test_resolve_errors_name_the_model_and_the_fix(
    hub: FakeHub, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli("estimate", "newlab/Gated-Nimbus", capsys=capsys)
    assert code == 2 and "gated" in err and "token" in err and err.count("\n") == 1
    code, _, err = cli("estimate", "newlab/does-not-exist", capsys=capsys)
    assert code == 2 and "newlab/does-not-exist" in err and "no model" in err
    hub.add_model("newlab/empty", files={"README.md": "hi"})
    with pytest.raises(ResolveError, match=r"newlab/empty has no config\.json"):
        resolve_model("newlab/empty")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ResolveError, match="offline mode") as exc:
        resolve_model("newlab/never-seen")
    assert "newlab/never-seen" in str(exc.value) and "not in the HF cache" in str(exc.value)


def test_hf_cache_snapshot_with_weights_needs_no_network(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("VRAMDESK_CACHE_DIR", str(tmp_path / "vd"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    tensors = tiny_llama_tensors()
    _fake_hf_cache(
        tmp_path / "hf",
        "local/tiny",
        {"config.json": json.dumps(TINY_CONFIG).encode(), "model.safetensors": safetensors_bytes(tensors)},
    )
    facts = resolve_model("local/tiny")
    assert facts.checkpoint_source == "safetensors headers in the HF cache (1 file)"
    assert sum(t.stored_bytes or 0 for t in facts.checkpoint or ()) == _stored_bytes(tensors)
