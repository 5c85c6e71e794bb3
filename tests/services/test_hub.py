"""The Hub client against a fake Hub on 127.0.0.1, spoken to over real HTTP by huggingface_hub."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakehub import (
    TINY_CONFIG,
    FakeHub,
    hub_environment,
    llama_gguf,
    safetensors_bytes,
    shard,
    tiny_llama_tensors,
)

from vramdesk.services import hub as hub_module
from vramdesk.services.cache import cached_models, scan_hf_cache
from vramdesk.services.hub import HubClient, HubError, display_endpoint, pick_gguf, run_with_deadline


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeHub]:
    with hub_environment(monkeypatch, tmp_path) as fake:
        tensors = tiny_llama_tensors()
        fake.add_model(
            "acme/tiny-llama",
            info={"downloads": 100, "likes": 3, "safetensors": {"parameters": {"BF16": 74_048}, "total": 74_048}},
            files={"config.json": json.dumps(TINY_CONFIG), **shard(tensors, 3)},
        )
        fake.add_model(
            "acme/tiny-llama-instruct",
            info={"downloads": 500},
            files={"config.json": json.dumps(TINY_CONFIG), "model.safetensors": safetensors_bytes(tensors)},
        )
        fake.add_model("acme/vision-llama", info={"downloads": 50, "pipeline_tag": "image-text-to-text"})
        fake.add_model("acme/bert-llama", info={"downloads": 9000, "pipeline_tag": "fill-mask"})
        fake.add_model("acme/llama-gguf", info={"gguf": {"total": 1, "architecture": "llama"}}, files={
            "tiny-Q8_0.gguf": llama_gguf(vocab=4096)[0], "tiny-Q4_K_M.gguf": llama_gguf(wtype="Q4_K")[0]})  # fmt: skip
        fake.add_model("acme/gated-llama", info={"gated": "manual"}, files={"config.json": json.dumps(TINY_CONFIG)})
        fake.gated.add("acme/gated-llama")
        yield fake


def client(hub: FakeHub, **kw: object) -> HubClient:
    return HubClient(token=kw.pop("token", False), timeout=kw.pop("timeout", 3.0), **kw)  # type: ignore[arg-type]


def test_search_follows_pages_sorts_by_downloads_and_asks_for_llms(hub: FakeHub) -> None:
    models = client(hub).search("llama", limit=10)
    assert [m.id for m in models] == [
        "acme/tiny-llama-instruct",
        "acme/tiny-llama",
        "acme/vision-llama",
        "acme/gated-llama",
        "acme/llama-gguf",
    ]
    assert "acme/bert-llama" not in {m.id for m in models}  # fill-mask is not a chat model
    tiny = next(m for m in models if m.id == "acme/tiny-llama")
    assert tiny.params_total == 74_048 and tiny.params_by_dtype == {"BF16": 74_048} and tiny.likes == 3
    first = next(q for m, p, q, _ in hub.log if p == "/api/models" and "cursor" not in q)
    assert first["sort"] == ["downloads"] and set(first["expand"]) >= {"safetensors", "config", "gguf", "gated"}
    assert {tuple(q["pipeline_tag"]) for m, p, q, _ in hub.log if p == "/api/models" and "cursor" not in q} == {
        ("text-generation",),
        ("image-text-to-text",),
    }
    assert any("cursor" in q for _, p, q, _ in hub.log if p == "/api/models")  # the Link header was followed
    assert all("vramdesk/" in h.get("user-agent", "") for _, _, _, h in hub.log)


def test_hf_endpoint_is_read_at_call_time(hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    c = HubClient(token=False)  # no endpoint given: HF_ENDPOINT (set by the fixture after import) decides
    assert c.endpoint == hub.url
    assert c.model_info("acme/tiny-llama").downloads == 100
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    with pytest.raises(HubError) as exc:
        c.model_info("acme/tiny-llama")
    assert exc.value.kind == "offline" and "127.0.0.1:9" in str(exc.value)


def test_model_info_config_and_safetensors_headers(hub: FakeHub, tmp_path: Path) -> None:
    c = client(hub)
    info = c.model_info("acme/llama-gguf")
    assert set(info.gguf_files) == {"tiny-Q8_0.gguf", "tiny-Q4_K_M.gguf"} and info.gguf == {
        "total": 1,
        "architecture": "llama",
    }
    cfg = c.config("acme/tiny-llama")
    assert cfg == TINY_CONFIG
    assert list((tmp_path / "hf-cache").glob("models--acme--tiny-llama/snapshots/*/config.json"))
    scanned = scan_hf_cache()  # huggingface_hub.scan_cache_dir sees what was downloaded
    assert [(r.id, r.has_config) for r in scanned] == [("acme/tiny-llama", True)] and scanned[0].size_on_disk > 0
    assert [m.id for m in cached_models()] == ["acme/tiny-llama"]
    expected = {k: (d, tuple(s)) for k, (d, s) in tiny_llama_tensors().items()}
    entries, n = c.safetensors_entries("acme/tiny-llama")  # sharded, per-shard ranged reads
    assert entries == expected and n == 3
    assert sum(1 for _, p, _, h in hub.log if p.endswith(".safetensors") and "range" in h) == 3
    hub.sharded_endpoint = True  # the Hub's one-request endpoint
    hub.log.clear()
    assert c.safetensors_entries("acme/tiny-llama") == (expected, 3)
    assert not any(p.endswith("-of-00003.safetensors") for _, p, _, _ in hub.log)
    assert c.safetensors_entries("acme/tiny-llama-instruct") == (expected, 1)
    with pytest.raises(HubError, match="has no safetensors weights") as exc:
        c.safetensors_entries("acme/vision-llama")
    assert exc.value.kind == "not_found"


def test_gguf_header_by_growing_ranged_reads(hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hub_module, "GGUF_FIRST_READ", 1024)
    header, size = client(hub).gguf_header("acme/llama-gguf", "tiny-Q8_0.gguf")
    assert header.kv["tokenizer.ggml.tokens"].length == 4096
    assert size == len(hub.repos["acme/llama-gguf"]["files"]["tiny-Q8_0.gguf"])
    ranges = [h["range"] for _, p, _, h in hub.log if p.endswith(".gguf")]
    assert ranges[0] == "bytes=0-1023" and len(ranges) > 2  # the header (36 kB of tokens) needed more reads
    assert all(int(r.split("-")[1]) < 200_000 for r in ranges)  # never the tensor data
    assert pick_gguf(["a-Q8_0.gguf", "a-Q4_K_M.gguf", "mmproj-f16.gguf"]) == "a-Q4_K_M.gguf"
    assert pick_gguf(["a-Q8_0.gguf", "a-Q4_K_M.gguf"], "q8_0") == "a-Q8_0.gguf"
    assert pick_gguf(["b-00002-of-00002.gguf", "b-00001-of-00002.gguf"]) == "b-00001-of-00002.gguf"


def test_errors_are_mapped_to_kinds_with_advice(hub: FakeHub) -> None:
    c = client(hub)
    with pytest.raises(HubError) as exc:
        c.config("acme/no-such-model")
    assert exc.value.kind == "not_found" and "acme/no-such-model" in str(exc.value) and "token" in str(exc.value)
    with pytest.raises(HubError) as exc:
        c.config("acme/gated-llama")
    assert exc.value.kind == "gated" and "set a Hugging Face token" in str(exc.value)
    with pytest.raises(HubError) as exc:
        client(hub, token="hf_fake_token_for_tests").config("acme/gated-llama")
    assert exc.value.kind == "gated" and "no access" in str(exc.value)
    assert any(h.get("authorization") == "Bearer hf_fake_token_for_tests" for _, _, _, h in hub.log)
    hub.fail["^/api/models/acme/tiny-llama$"] = (429, "")
    with pytest.raises(HubError) as exc:
        c.model_info("acme/tiny-llama")
    assert exc.value.kind == "rate_limited"
    with pytest.raises(HubError) as exc:
        c.config("not a repo id")
    assert exc.value.kind == "not_found"


def test_failing_server_answers_fast_without_retry_loops(hub: FakeHub) -> None:
    c = client(hub)
    hub.fail["^/api/models"] = (500, "")
    hub.fail["/resolve/"] = (503, "")
    for call in (lambda: c.search("llama"), lambda: c.model_info("acme/tiny-llama"), lambda: c.config("acme/x-y")):
        with pytest.raises(HubError) as exc:
            call()
        assert exc.value.kind == "server", exc.value
    # counted, not timed: every failing request went out once (huggingface_hub alone would retry for ~23 s)
    requests = [(method, path, tuple(sorted((k, tuple(v)) for k, v in q.items()))) for method, path, q, _ in hub.log]
    assert requests and len(requests) == len(set(requests)), requests


def test_malformed_answers(hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    hub.add_model("acme/bad-config", files={"config.json": "{not json"})
    with pytest.raises(HubError) as exc:
        client(hub).config("acme/bad-config")
    assert exc.value.kind == "malformed" and "config.json" in str(exc.value)
    hub.add_model("acme/bad-gguf", files={"x.gguf": b"NOPE" + b"\0" * 64})
    with pytest.raises(HubError, match="bad magic") as exc:
        client(hub).gguf_header("acme/bad-gguf", "x.gguf")
    assert exc.value.kind == "malformed"
    monkeypatch.setattr(hub, "_search", lambda h, q, head: hub._json(h, {"models": "not a list"}, head=head))
    with pytest.raises(HubError) as exc:
        client(hub).search("llama")
    assert exc.value.kind == "malformed"


def test_slow_hub_times_out_and_can_be_abandoned(hub: FakeHub) -> None:
    # the server answers after a minute: a client that gives up before then did not wait for it, however loaded
    # the machine (the bounds below only catch a hang, not a slow start)
    answer_after = 60.0
    hub.delay["^/api/models"] = answer_after
    t0 = time.perf_counter()
    with pytest.raises(HubError) as exc:
        client(hub, timeout=0.3).search("llama")
    assert exc.value.kind == "timeout" and time.perf_counter() - t0 < answer_after
    cancel = threading.Event()
    threading.Timer(0.1, cancel.set).start()
    t0 = time.perf_counter()
    with pytest.raises(HubError) as exc:
        client(hub, timeout=answer_after, cancel=cancel).model_info("acme/tiny-llama")
    # "cancelled", not "timeout": the cancel ended it before the client's own deadline
    assert exc.value.kind == "cancelled" and time.perf_counter() - t0 < answer_after


def test_deadline_runner_stops_waiting_for_a_call_that_ignores_timeouts() -> None:
    gate = threading.Event()
    returned = threading.Event()

    def stuck() -> None:
        gate.wait(60)  # stuck until the test opens the gate (60 s: only a hang guard)
        returned.set()

    with pytest.raises(HubError) as exc:
        run_with_deadline(stuck, 0.2, "a stuck call")
    # the runner gave up while the call was still stuck: an order of events, not a time
    assert exc.value.kind == "timeout" and not returned.is_set()
    gate.set()
    with pytest.raises(ZeroDivisionError):
        run_with_deadline(lambda: 1 // 0, 1.0, "a failing call")


def test_offline_mode_sends_nothing(hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    c = HubClient(token=False)
    for call in (lambda: c.search("llama"), lambda: c.model_info("acme/tiny-llama"), lambda: c.config("a/b")):
        with pytest.raises(HubError) as exc:
            call()
        assert exc.value.kind == "offline" and "HF_HUB_OFFLINE" in str(exc.value)
    assert hub.log == []


def test_endpoint_credentials_never_show() -> None:
    assert display_endpoint("https://user:pw@mirror.example/hf") == "mirror.example/hf"
    assert display_endpoint("http://127.0.0.1:8080") == "127.0.0.1:8080"
