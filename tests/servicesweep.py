"""The sweep of the services' and storage's texts: every kind of sentence those layers make, built by the real code
paths: NVML reasons from the fake NVML (tests/fake_nvml/), Hub errors from the fake Hub over real HTTP
(tests/fakehub.py), model-resolution and local-file errors from tiny bad files, the facts' notes of resolved models
and the window's warnings and weights explanation for them, the library's notices from corrupted and newer-schema
files, DeepSpeed notes and refusals, the catalog's notes, the browser's details, and the messages the fakes cannot
reach, formatted as their code formats them.

Shared by tests/services/test_message_ids_services.py (every text carries its message id, has Chinese for each id,
keeps its numbers and names) and tests/ui/test_service_text.py (the texts as the window shows them are Chinese).
"""

from __future__ import annotations

import json
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fake_nvml.pyfake import RTX, FakeNvml, NVMLError, NVMLError_DriverNotLoaded, NVMLError_LibraryNotFound
from fakehub import TINY_CONFIG, FakeHub, hub_environment, llama_gguf, safetensors_bytes, tiny_llama_tensors
from i18ncheck import TOKEN

import vramdesk.core.messages
import vramdesk.services.catalog
import vramdesk.services.hub
import vramdesk.services.local
import vramdesk.services.nvml as nv
import vramdesk.services.resolve
import vramdesk.services.search
import vramdesk.storage.library
import vramdesk.storage.scenarios
from vramdesk.core.gpu import GIB, MIB
from vramdesk.core.messages import Text, free
from vramdesk.core.scenario import Scenario
from vramdesk.error_words import os_error, os_reason, said
from vramdesk.services.cache import AnswerCache
from vramdesk.services.catalog import CatalogError, default_catalog
from vramdesk.services.deepspeed import (
    DeepSpeedConfigError,
    apply_deepspeed,
    describe_plan,
    parse_deepspeed,
    read_deepspeed,
)
from vramdesk.services.hub import HubClient, HubError, HubModel, run_with_deadline
from vramdesk.services.local import LocalModelError
from vramdesk.services.resolve import ResolveError, resolve_model
from vramdesk.services.search import hub_results, local_results
from vramdesk.storage.library import Autosave, LibraryError, ScenarioLibrary, file_text, read_entry
from vramdesk.storage.scenarios import ScenarioFileError, load_scenario
from vramdesk.ui.presenter import evaluate_scenario

CAT = default_catalog()


class Texts:
    """(kind, Text, words to keep as they are) from the real code."""

    def __init__(self) -> None:
        self.items: list[tuple[str, Text, set[str]]] = []

    def add(self, kind: str, text: str | None, keep: set[str] | frozenset[str] = frozenset()) -> None:
        assert isinstance(text, Text), (kind, text)
        self.items.append((kind, text, set(keep)))

    def error(self, kind: str, keep: set[str], fn: Callable[[], Any], *exc: type[BaseException]) -> None:
        """Run ``fn``, which must fail with one of ``exc`` whose ``args[0]`` is its message as a Text."""
        with pytest.raises(exc or (Exception,)) as info:
            fn()
        message = info.value.args[0]
        assert isinstance(message, Text) and message == str(info.value), (kind, info.value)
        self.add(kind, message, keep)


def nvml_texts(t: Texts) -> None:
    keep = {nv.LIBRARY_NAME}
    for error in (
        NVMLError_LibraryNotFound("NVML Shared Library Not Found"),
        NVMLError_DriverNotLoaded("Driver Not Loaded"),
        RuntimeError("Unknown Error"),
    ):
        t.add("nvml", nv.detect_gpus(FakeNvml([RTX], init_error=error)).reason, keep)

    class NoPermission(NVMLError):  # noqa: N818 - pynvml's naming
        pass

    class PermissionNvml(FakeNvml):
        NVMLError_NoPermission = NoPermission

    t.add("nvml", nv.detect_gpus(PermissionNvml([RTX], init_error=NoPermission("Insufficient Permissions"))).reason)
    t.add("nvml", nv.detect_gpus(FakeNvml([])).reason)
    # `vramdesk estimate` without --gpu: what it says it planned with (one GPU, two)
    for fake in ([RTX], [RTX, RTX]):
        spec, said_note = nv.machine_gpu(found=nv.detect_gpus(FakeNvml(fake)))
        assert spec is not None and said_note is not None
        t.add("nvml", said_note, {"RTX 4090"})
    assert nv.machine_gpu(found=nv.detect_gpus(FakeNvml([]))) == (None, None)

    class BrokenGpu(FakeNvml):
        def nvmlDeviceGetName(self, h: dict[str, Any]) -> str:
            if h.get("broken"):
                raise NVMLError("GPU is lost")
            return super().nvmlDeviceGetName(h)

    t.add("nvml", nv.detect_gpus(BrokenGpu([RTX, {**RTX, "broken": True}])).reason)
    t.add("nvml", nv.detect_gpus(BrokenGpu([{**RTX, "broken": True}])).reason)

    class CountFails(FakeNvml):
        def nvmlDeviceGetCount(self) -> int:
            raise NVMLError("Unknown Error")

    t.add("nvml", nv.detect_gpus(CountFails([RTX])).reason)
    overfull = {**RTX, "used": 30 * 1024 * MIB}  # used above the total: the figures do not add up
    t.add("nvml", nv.detect_gpus(FakeNvml([overfull])).reason)
    t.add("nvml", nv.checked_free(24 * GIB, 20 * GIB, 16 * GIB)[1])
    t.add("nvml", nv.checked_free(24 * GIB, 20 * GIB, 16 * GIB, GIB)[1])
    # the probe child's exits, and what the parent says when it cannot start or wait for it
    said_last = "ModuleNotFoundError: No module named 'pynvml'"
    t.add("nvml", nv._answer(1, "", f"Traceback\n{said_last}\n").reason, set(TOKEN.findall(said_last)))
    t.add("nvml", nv._answer(1, "", "").reason)
    t.add("nvml", nv._answer(0, "noise\n", "").reason)
    t.add("nvml", nv._answer(-9, "", "").reason, {"SIGKILL"})
    t.add("nvml", nv._answer(-200, "", "").reason)
    t.add("nvml", nv.CRASHED_EXCEPTION(code=0xC0000005))
    t.add("nvml", nv.HUNG(seconds=0.5))
    t.add("nvml", nv.CANCELLED())
    t.add("nvml", nv.NOT_INSTALLED())
    for words in ("Not Supported", "Uninitialized", "Function Not Found", "Insufficient Permissions"):
        t.add("nvml", nv.detect_gpus(FakeNvml([RTX], init_error=NVMLError(words))).reason)
    for words in ("NVML Shared Library Not Found", "Driver Not Loaded"):  # pynvml's words, as a GPU's problem
        t.add("nvml", nv.GPU_PROBLEM(index=0, problem=nv.nvml_error(NVMLError(words))))
    t.add("nvml", nv.PROBE_NOT_STARTED(error=os_error(PermissionError(13, "Permission denied", "/usr/bin/python"))))
    spec = nv.to_gpu_spec(
        nv.DetectedGpu(
            0, "NVIDIA GeForce RTX 4090", 24 * GIB, GIB, 23 * GIB, (nv.GpuProcess(4242, "python3", 22 * GIB),)
        )
    )
    t.add("nvml", spec.held_by, {"python3"})
    nameless = nv.DetectedGpu(0, "RTX 4090", 24 * GIB, GIB, 23 * GIB, (nv.GpuProcess(4242, "", 22 * GIB),))
    t.add("nvml", nv.to_gpu_spec(nameless).held_by)
    t.error("nvml", set(), lambda: nv.to_gpu_spec(nv.DetectedGpu(3, "Nameless", 0, 0, 0)), ValueError)


def _client(**kw: Any) -> HubClient:
    return HubClient(token=kw.pop("token", False), timeout=kw.pop("timeout", 3.0), **kw)


def hub_texts(t: Texts, hub: FakeHub, tmp_path: Path) -> None:
    host = hub.url.split("://", 1)[1]
    keep = {host, hub.url, "tiny", "zzq", "'id'", "b'NOPE'"}  # queries, a JSON key, a file's bytes
    keep |= {"127.0.0.1:9", "acme/no-gguf:Q4_K_M", "acme/no-gguf"}
    hub.add_model(
        "acme/tiny-llama",
        info={"downloads": 100, "safetensors": {"parameters": {"BF16": 74_048}, "total": 74_048}},
        files={"config.json": json.dumps(TINY_CONFIG), "model.safetensors": safetensors_bytes(tiny_llama_tensors())},
    )
    hub.add_model("acme/no-weights", files={"config.json": json.dumps(TINY_CONFIG)})
    hub.add_model("acme/bad-config", files={"config.json": "{not json"})
    hub.add_model("acme/list-config", files={"config.json": "[1, 2]"})
    hub.add_model("acme/fake-gguf", files={"model-Q4_K_M.gguf": b"NOPE" + b"\0" * 64})
    hub.add_model("acme/gguf-only", files={"model-Q8_0.gguf": llama_gguf()[0]})
    hub.add_model("acme/gated-llama", info={"gated": "manual"}, files={"config.json": json.dumps(TINY_CONFIG)})
    hub.gated.add("acme/gated-llama")
    c = _client()
    repos = {"acme/tiny-llama", "acme/no-weights", "acme/bad-config", "acme/list-config", "acme/fake-gguf"}
    repos |= {"acme/gguf-only", "acme/gated-llama", "acme/nope", "acme/tiny-llama/missing.gguf"}
    keep |= repos | {str(tmp_path)} | {m.id for m in CAT.models()}  # "did you mean" names catalog models

    t.error("hub", keep, lambda: c.model_info("acme/nope"), HubError)
    t.error("hub", keep, lambda: _client(token="hf_fake").model_info("acme/nope"), HubError)
    t.error("hub", keep, lambda: c.config("acme/gated-llama"), HubError)
    t.error("hub", keep, lambda: _client(token="hf_fake").config("acme/gated-llama"), HubError)
    t.error("hub", keep, lambda: c.download("acme/tiny-llama", "missing.json"), HubError)
    t.error("hub", keep, lambda: c.safetensors_entries("acme/no-weights"), HubError)
    t.error("hub", keep, lambda: c.safetensors_entries("acme/gated-llama"), HubError)
    t.error("hub", keep, lambda: c.config("acme/bad-config"), HubError)
    t.error("hub", keep, lambda: c.config("acme/list-config"), HubError)
    t.error("hub", keep, lambda: c.gguf_header("acme/fake-gguf", "model-Q4_K_M.gguf"), HubError)
    t.error("hub", keep | {"not a repo"}, lambda: c.model_info("not a repo"), HubError)
    t.error("hub", keep, lambda: HubModel.from_api({"downloads": 3}), HubError)
    t.error("hub", keep, lambda: _client(offline=True).search("llama"), HubError)
    t.error("hub", keep, lambda: _client(endpoint="http://127.0.0.1:9").model_info("acme/tiny-llama"), HubError)
    slow = vramdesk.services.hub.SEARCHING(query="llama")
    # the stuck calls outlast their deadlines by a minute, so no loaded machine makes them finish in time
    t.error("hub", keep, lambda: run_with_deadline(lambda: time.sleep(60), 0.2, slow), HubError)
    cancel = threading.Event()
    cancel.set()
    for query in ("llama", "x"):
        what = vramdesk.services.hub.SEARCHING(query=query)
        t.error("hub", keep, lambda what=what: run_with_deadline(lambda: time.sleep(2), 5, what, cancel), HubError)
    for status in (429, 500, 503, 401, 403, 404):
        hub.fail[r"^/api/models$"] = (status, "")
        t.error("hub", keep, lambda: c.search("llama"), HubError)
        t.error("hub", keep, lambda: _client(token="hf_fake").search("llama"), HubError)
    hub.fail.clear()
    hub.delay[r"^/api/models/acme/tiny-llama$"] = 60.0
    t.error("hub", keep, lambda: _client(timeout=0.3).model_info("acme/tiny-llama"), HubError)
    hub.delay.clear()

    # the browser's note under the results: the error, and what is shown instead (saved answer or local only)
    answers = AnswerCache(tmp_path / "answers")
    assert hub_results("tiny", client=c, answers=answers).results
    hub.fail[r"^/api/models$"] = (503, "")
    t.add("note", hub_results("tiny", client=c, answers=answers).note, keep)
    t.add("note", hub_results("zzq", client=c, answers=answers).note, keep)
    hub.fail.clear()

    # model resolution: what the window shows when a typed model cannot be read
    def resolve(ref: str, **kw: Any) -> Any:
        client = kw.pop("client", c)
        return resolve_model(ref, CAT, client=client, cache_dir=tmp_path / "hf-cache", answers=answers, **kw)

    for ref in ("acme/nope", "acme/gated-llama", "acme/bad-config", "acme/fake-gguf:Q4_K_M", "acme/tiny-llama:Q5_K"):
        t.error("resolve", keep, lambda ref=ref: resolve(ref), ResolveError)
    t.error("resolve", keep, lambda: resolve("acme/tiny-llama/missing.gguf"), ResolveError)
    t.error("resolve", keep, lambda: resolve("acme/no-gguf:Q4_K_M"), ResolveError)
    t.error("resolve", keep, lambda: resolve("acme/nope", client=_client(offline=True)), ResolveError)
    t.error("resolve", keep | {"nonsense model"}, lambda: resolve("nonsense model"), ResolveError)
    t.error("resolve", keep | {"meta-llama/Llama-3.1-8X"}, lambda: resolve("meta-llama/Llama-3.1-8X"), ResolveError)
    # what a model read from the Hub says about itself (notes and explanations in the window)
    for ref in ("acme/tiny-llama", "acme/no-weights", "acme/gguf-only"):
        facts_texts(t, resolve(ref), keep)
    for offline in (False, True):  # saved from the Hub before: read back from the answer cache
        facts_texts(t, resolve("acme/tiny-llama", client=_client(offline=offline)), keep)
    # the browser's details: the Hub's results, models looked at before, the HF cache's
    for r in hub_results("acme", client=c, answers=answers).results + local_results(
        "acme", answers=answers, cache_dir=tmp_path / "hf-cache"
    ):
        if r.detail:
            t.add("browser", r.detail, keep)


def facts_texts(t: Texts, facts: Any, keep: set[str]) -> None:
    """A resolved model's texts: the facts' notes and where the weights were priced from, and the window's texts for
    it, the estimate's warnings and the weights' explanation."""
    keep = keep | {facts.model_id}
    for note in facts.notes:
        t.add("facts", note, keep)
    if facts.checkpoint_source:
        t.add("facts", facts.checkpoint_source, keep)
    s = Scenario.model_validate({"model": {"id": facts.model_id}, "hardware": {"gpu": "RTX 4090"}})
    ev = evaluate_scenario(s, resolve=lambda _ref: facts)
    assert ev.view is not None, ev.error
    for w in ev.view.warnings:
        t.add("facts", w, keep)
    for p in ev.view.estimate.phases:
        for comp in p.components:
            if comp.name == "weights":
                t.add("facts", comp.explain, keep)


def local_texts(t: Texts, tmp_path: Path) -> None:
    root = tmp_path / "models"
    root.mkdir()
    keep = {str(tmp_path), "'zz-new'", "zz-new", "b'GGML'"}  # what the bad files hold

    def bad(name: str, data: bytes | str | None) -> str:
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if data is not None:
            p.write_bytes(data if isinstance(data, bytes) else data.encode())
        return str(p)

    def fails(ref: str) -> None:
        t.error("local", keep, lambda: resolve_model(ref, CAT), ResolveError)

    fails(bad("missing/config.json", None))
    fails(bad("broken/config.json", '{"model_type": "llama",}'))
    kinds = (
        ("list", "[1, 2, 3]"),
        ("null", "null"),
        ("text", '"x"'),
        ("number", "1.5"),
        ("flag", "true"),
        ("int", "3"),
    )
    for name, value in kinds:
        fails(bad(f"{name}/config.json", value))
    fails(bad("latin/config.json", b'{"a": "\xff"}'))
    fails(bad("empty/config.json", "{}"))
    fails(bad("unknown/config.json", json.dumps({"model_type": "zz-new", "architectures": ["ZzForCausalLM"]})))
    (root / "nofolder").mkdir()
    fails(str(root / "nofolder"))
    cfg = json.dumps(TINY_CONFIG)
    bad("big/config.json", " " * (8 * 1024 * 1024 + 1))
    fails(str(root / "big"))
    bad("trunc/config.json", cfg)
    bad("trunc/model.safetensors", struct.pack("<Q", 1_000) + b"{}")
    fails(str(root / "trunc"))
    bad("junk/config.json", cfg)
    bad("junk/model.safetensors", struct.pack("<Q", 8) + b"notjson!")
    fails(str(root / "junk"))
    shard = safetensors_bytes({"x": ("BF16", (2,))})
    weight_map = {"model.embed_tokens.weight": "model-00002-of-00002.safetensors"}
    for folder, first_shard in (("", None), ("-with-first", shard)):  # the index alone, and with its first shard
        bad(f"noindexmap{folder}/config.json", cfg)
        bad(f"noindexmap{folder}/model.safetensors.index.json", json.dumps({"metadata": {}}))
        bad(f"noindexmap{folder}/model-00001-of-00002.safetensors", first_shard)
        fails(str(root / f"noindexmap{folder}"))
        bad(f"shardmissing{folder}/config.json", cfg)
        bad(f"shardmissing{folder}/model.safetensors.index.json", json.dumps({"weight_map": weight_map}))
        bad(f"shardmissing{folder}/model-00001-of-00002.safetensors", first_shard)
        fails(str(root / f"shardmissing{folder}"))
    bad("outside/config.json", cfg)
    bad("outside/model.safetensors.index.json", json.dumps({"weight_map": {"x": "../evil.safetensors"}}))
    fails(str(root / "outside"))
    fails(bad("magic.gguf", b"GGML" + b"\0" * 60))
    fails(bad("short.gguf", b"GGUF"))
    fails(bad("old.gguf", b"GGUF" + struct.pack("<IQQ", 1, 0, 0)))
    fails(bad("noarch.gguf", b"GGUF" + struct.pack("<IQQ", 3, 0, 0)))
    fails(bad("missing.gguf", None))
    (root / "split-00001-of-00002.gguf").write_bytes(llama_gguf()[0])
    fails(str(root / "split-00001-of-00002.gguf"))
    data = llama_gguf()[0]
    fails(bad("cut.gguf", data[: len(data) - 8]))
    huge = struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 300 * 1024 * 1024)
    fails(bad("huge.gguf", b"GGUF" + huge))
    # a folder with a config and no weights, and models read from local files
    bad("configonly/config.json", cfg)
    bad("configonly/model-Q4_K_M.gguf", data)
    facts_texts(t, vramdesk.services.resolve._local(str(root / "configonly")), keep)
    bad("bare/config.json", cfg)
    facts_texts(t, vramdesk.services.resolve._local(str(root / "bare")), keep)
    two = (root / "a-00001-of-00002.gguf", root / "a-00002-of-00002.gguf")
    t.add("local", vramdesk.services.local.LocalModel(two[0], {}, "gguf", files=two).source, keep)
    t.add("local", vramdesk.services.local.LocalModel(root, {}, "safetensors", files=two).source, keep)
    good = root / "good"
    good.mkdir()
    (good / "config.json").write_text(cfg)
    (good / "model.safetensors").write_bytes(safetensors_bytes(tiny_llama_tensors()))
    facts_texts(t, resolve_model(str(good), CAT), keep)
    (root / "good.gguf").write_bytes(data)
    facts_texts(t, resolve_model(str(root / "good.gguf"), CAT), keep)
    t.add("local", os_reason(PermissionError(13, "Permission denied")))
    t.add("local", os_error(IsADirectoryError(21, "Is a directory", "x")))


def storage_texts(t: Texts, tmp_path: Path) -> None:
    root = tmp_path / "library"
    lib = ScenarioLibrary(root)
    # the files' own folder and contents, and the saved model's id
    keep = {str(tmp_path), str(root), "'two'", "'serve'", "Qwen/Qwen3-8B", "zz", "'kept'"}
    good = Scenario.model_validate({"model": {"id": "Qwen/Qwen3-8B"}})
    lib.save(good, name="kept")
    (root / "notjson.vramdesk.json").write_text("{oops")
    (root / "list.vramdesk.json").write_text("[]")
    (root / "binary.vramdesk.json").write_bytes(b"\xff\xfe\x00")
    (root / "invalid.vramdesk.json").write_text(json.dumps({"model": {"id": "x/y"}, "workload": {"batch": 0}}))
    (root / "badversion.vramdesk.json").write_text(json.dumps({"schema_version": "two", "model": {"id": "x/y"}}))
    (root / "v0.vramdesk.json").write_text(json.dumps({"schema_version": 0}))
    (root / "v0mode.vramdesk.json").write_text(json.dumps({"schema_version": 0, "model_id": "x/y", "mode": "serve"}))
    (root / "extra.vramdesk.json").write_text(json.dumps({"model": {"id": "x/y"}, "zz": 1}))
    newer = json.loads(file_text(good))
    newer.update(schema_version=99, future_field=1)
    (root / "newer.vramdesk.json").write_text(json.dumps(newer))
    scan = lib.scan()
    assert len(scan.quarantined) == 8, scan.quarantined
    for q in scan.quarantined:
        t.add("library", q.reason, keep)
    (note,) = [e.note for e in scan.entries if e.note]
    t.add("library", note, keep)
    newer_entry = next(e for e in scan.entries if e.read_only)
    kept = next(e for e in scan.entries if not e.read_only)
    t.error("library", keep, lambda: lib.update(newer_entry.id, good), LibraryError)
    t.error("library", keep, lambda: lib.update(kept.id, good, expected_revision=7), LibraryError)
    t.error("library", keep, lambda: lib.get("gone.vramdesk.json"), LibraryError)
    t.error("library", keep, lambda: lib.get("../x"), LibraryError)
    t.error("library", keep, lambda: lib.rename(kept.id, "  "), LibraryError)
    t.error("library", keep, lambda: lib.rename(kept.id, "x" * 500), LibraryError)
    t.error("library", keep, lambda: lib.restore(kept.id, "none.vramdesk.json"), LibraryError)
    t.error("library", keep, lambda: lib.export_file(kept.id, kept.path), LibraryError)
    t.error("library", keep, lambda: lib.import_file(root / "newer.vramdesk.json"), ScenarioFileError)
    t.error("library", keep, lambda: load_scenario(root / "newer.vramdesk.json"), ScenarioFileError)
    t.error("library", keep, lambda: read_entry(tmp_path / "absent.json"), ScenarioFileError)
    for size in (3_000_000, 5_000_000):  # malformed JSON, and over the size limit
        big = tmp_path / f"big-{size}.json"
        big.write_text(" " * size)
        t.error("library", keep, lambda big=big: load_scenario(big), ScenarioFileError)
    # a version that cannot be read, and the library's lock held elsewhere
    lib.update(kept.id, good)
    (version,) = lib.versions(kept.id)
    version.path.write_text("{")
    (broken,) = lib.versions(kept.id)
    t.add("library", broken.error, keep)
    t.add("library", vramdesk.storage.library.BUSY(root=str(root), seconds=15.0), keep)
    t.add(
        "library",
        vramdesk.storage.library.CANNOT_WRITE(root=str(root), reason=os_reason(OSError(30, "Read-only file system"))),
        keep,
    )
    for message in (vramdesk.storage.library.CANNOT_LIST, vramdesk.storage.library.LEFT_IN_PLACE):
        t.add(
            "library",
            message(
                error=os_error(PermissionError(13, "Permission denied", str(root))),
                reason=os_reason(PermissionError(13, "Permission denied")),
            ),
            keep,
        )
    # a damaged autosave is moved aside (nothing to offer back)
    store = Autosave(tmp_path / "autosave")
    store.folder.mkdir()
    (store.folder / "1-2.json").write_text("{")
    assert store.orphans() == [] and (store.folder / "corrupted").is_dir()


def deepspeed_texts(t: Texts, tmp_path: Path) -> None:
    """What File > Apply DeepSpeed config... can show: the plan's summary and notes, and every refusal."""
    full = {
        "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme"}, "offload_param": {"device": "cpu"}},
        "fp16": {"enabled": True},
        "optimizer": {"type": "Lion"},
        "train_micro_batch_size_per_gpu": 2,
        "gradient_accumulation_steps": 8,
        "activation_checkpointing": {"partition_activations": True},
    }
    zeropp = {
        "zero_optimization": {
            "stage": 3,
            "zero_hpz_partition_size": 8,
            "mics_shard_size": 16,
            "zero_quantized_weights": True,
            "zero_quantized_gradients": True,
            "stage3_max_live_parameters": 1e9,
            "stage3_prefetch_bucket_size": 5e7,
        }
    }
    zeropp_tuned = {"zero_optimization": {**zeropp["zero_optimization"], "reduce_bucket_size": 10_000}}
    one_tuned = {"zero_optimization": {"stage": 2, "stage3_max_live_parameters": 1e9}, "bf16": {"enabled": False}}
    auto = {"zero_optimization": {"stage": "auto"}}
    configs = (
        full,
        {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}},
        {},
        zeropp,
        zeropp_tuned,
        one_tuned,
        auto,
    )
    for config in configs:
        plan = parse_deepspeed(config)
        t.add("deepspeed", describe_plan(plan))
        for note in plan.notes:
            t.add("deepspeed", note)
    # (config, what must come through as written: the user's own key or value, the values a field takes)
    names = {"adafactor", "adam", "adamw", "cpuadam", "deepspeedcpuadam", "fusedadam", "lion", "sgd"}
    bad: list[tuple[object, set[str]]] = [
        ([1], set()),
        ({"zero_optimisation": {}}, {"zero_optimisation"}),
        ({"zero_optimization": []}, set()),
        ({"zero_optimization": {"stag": 2}}, {"stag"}),
        ({"zero_optimization": {"stage": 5}}, set()),
        ({"zero_optimization": {"stage": "2"}}, {"'2'"}),
        ({"zero_optimization": {"offload_optimizer": 3}}, set()),
        ({"zero_optimization": {"offload_optimizer": {"device": "disk"}}}, {"'disk'", "none", "cpu", "nvme"}),
        ({"zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}}}, set()),
        ({"bf16": {"enabled": "yes"}}, {"'yes'", "true", "false"}),
        ({"bf16": 1}, set()),
        ({"bf16": {"enabled": True}, "fp16": {"enabled": True}}, set()),
        ({"gradient_accumulation_steps": 0}, set()),
        ({"optimizer": {"type": "Muon"}}, {"'Muon'"} | names),
    ]
    for config, quoted in bad:
        t.error("deepspeed", quoted, lambda c=config: parse_deepspeed(c), DeepSpeedConfigError)
    (tmp_path / "bad.json").write_text("{oops")
    (tmp_path / "big.json").write_text(" " * 2_000_000)
    (tmp_path / "unknown.json").write_text(json.dumps({"zero_optimisation": {}}))
    for name in ("bad.json", "big.json", "absent.json", "unknown.json"):
        t.error("deepspeed", {str(tmp_path)}, lambda n=name: read_deepspeed(tmp_path / n), DeepSpeedConfigError)
    fsdp = Scenario.model_validate(
        {
            "model": {"id": "x/y"},
            "hardware": {"gpu_count": 8},
            "parallelism": {"fsdp": True},
            "workload": {"kind": "finetune"},
        }
    )
    too_big = parse_deepspeed({"zero_optimization": {"stage": 2, "reduce_bucket_size": 10**15}})
    t.error("deepspeed", set(), lambda: apply_deepspeed(fsdp, too_big), DeepSpeedConfigError)


def catalog_texts(t: Texts) -> None:
    names = {m.id for m in CAT.models()} | {g.name for g in CAT.gpus()}
    for m in CAT.models():
        for note in CAT.facts(m.id).notes:
            # (the published figure's own words are the catalog's data, shown as written)
            t.add("catalog", note, set(TOKEN.findall(m.published_text)) if note.id == "catalog.published" else set())
    for ref in ("meta-llama/Llama-3.1-8X", "zzz"):
        t.error("catalog", {ref}, lambda ref=ref: CAT.get(ref), CatalogError)
    for gpu in ("RTX", "Nonexistent GPU", "H10", "RTX 4091"):
        t.error("catalog", {gpu}, lambda gpu=gpu: CAT.gpu(gpu), CatalogError)
    for _kind, text, keep in t.items[-6:]:  # the names suggested
        keep |= {n for n in names if n in text}
    for r in local_results("", limit=300):
        if r.detail:
            t.add("browser", r.detail)
    t.add("browser", vramdesk.services.search._age(30))
    for seconds in (30, 600, 36_000, 400_000):
        t.add("note", vramdesk.services.search.SAVED_AGO(age=vramdesk.services.search._age(seconds)))


def made_directly(t: Texts, tmp_path: Path) -> None:
    """The messages the fakes cannot reach (a hostile or broken server, a disk that refuses, a file the OS will not
    let root read, a package without its resources), formatted as their code formats them."""
    hub, local, lib, resolve = (
        vramdesk.services.hub,
        vramdesk.services.local,
        vramdesk.storage.library,
        vramdesk.services.resolve,
    )
    where, repo, path = "huggingface.co", "acme/tiny-llama", str(tmp_path / "m")
    keep = {where, repo, path, str(tmp_path), "KeyError", "RuntimeError", "dict", "'bytes 1-2/3'", "None", "workload"}
    what = hub.READING_SAFETENSORS(repo=repo)
    for problem in (
        hub.GATED_THIS(where=where, hint=hub.TOKEN_SET()),
        hub.NO_REVISION(repo=repo, where=where),
        hub.THE_FILE_NOT_IN(repo=repo, where=where),
        hub.UNEXPECTED(where=where, kind="KeyError", error=said(KeyError("siblings"))),
        hub.LIST_NOT_JSON(problem=said(ValueError("Expecting value"))),
        hub.NOT_A_LIST(kind="dict"),
    ):
        # (a library's words, the JSON parser's here, are shown as it said them)
        t.add("hub", hub.FAILED(what=what, problem=problem), keep | {"'siblings'", "Expecting value"})
    t.add("hub", hub.FAILED_OTHER(what=what, kind="RuntimeError", error=said(RuntimeError("boom"))), keep | {"boom"})
    t.add("hub", hub.RANGE_IGNORED(filename="m.gguf", status=200), keep)
    t.add("hub", hub.BAD_RANGE(filename="m.gguf", value="bytes 1-2/3"), keep)
    t.add("hub", hub.BAD_RANGE(filename="m.gguf", value=None), keep)
    t.add("hub", hub.DATA_PAST_END(repo=repo, filename="m.gguf", end=10_000, total=9_000), keep)
    t.add("hub", hub.HEADER_TOO_LARGE(repo=repo, filename="m.gguf"), keep)
    denied = PermissionError(13, "Permission denied", path)
    t.add("local", local.CANNOT_READ(path=path, reason=os_reason(denied)), keep)
    t.add("local", local.TOO_LARGE_INDEX(path=path, size=70_000_000), keep)
    t.add("local", local.TRUNCATED_SAFETENSORS(path=path), keep)
    t.add("local", local.FILE_FAILED(path=path, problem=local.TRUNCATED_HEADER()), keep)
    t.add("local", local.FILE_FAILED(path=path, problem=local.HEADER_OVER_LIMIT(limit=local.MAX_GGUF_HEADER)), keep)
    t.add("local", local.FILE_FAILED(path=path, problem=local.HEADER_PAST(end=4_194_304)), keep)
    for errno, words in ((2, "No such file or directory"), (20, "Not a directory"), (28, "No space left on device")):
        t.add("library", lib.CANNOT_WRITE(root=path, reason=os_reason(OSError(errno, words))), keep)
    for errno, words in ((122, "Disk quota exceeded"), (1, "Operation not permitted")):
        t.add("library", lib.CANNOT_LIST(error=os_error(OSError(errno, words))), keep)
    t.add("library", lib.CANNOT_BE_READ(path=path, reason=os_reason(denied)), keep)
    # the network's words, as httpx repeats them from the OSError underneath (a Hub that cannot be reached)
    for errno, words in (
        (104, "Connection reset by peer"),
        (101, "Network is unreachable"),
        (113, "No route to host"),
        (110, "Connection timed out"),
        (-2, "Name or service not known"),
        (-3, "Temporary failure in name resolution"),
    ):
        try:
            raise RuntimeError(f"[Errno {errno}] {words}") from OSError(errno, words)
        except RuntimeError as wrapped:
            where = "huggingface.co"
            t.add("hub", hub.UNREACHABLE(where=where, kind="ConnectError", error=said(wrapped)), keep | {where})
    t.add("library", lib.NO_FREE_NAME(name="plan", root=path), keep | {"'plan'"})
    t.add("library", lib.APPEARED(id="plan.vramdesk.json"), keep)
    t.add("library", lib.CREATED_MEANWHILE(id="plan.vramdesk.json"), keep)
    scenarios = vramdesk.storage.scenarios
    t.add("library", scenarios.TOO_MANY_UNKNOWN(source=path), keep)
    t.add(
        "library",
        scenarios.FIELD_PROBLEM(field=scenarios.TOP_LEVEL(), problem=free("Field required")),
        {"Field required"},  # pydantic's words
    )
    problem = scenarios.VALUE_ERROR(problem=nv.NO_GPU())
    t.add(
        "library",
        scenarios.FILE_FAILED(source=path, problem=scenarios.FIELD_PROBLEM(field="workload", problem=problem)),
        keep,
    )
    t.add("library", scenarios.OPEN_FAILED(error=said(ScenarioFileError(scenarios.NOT_OBJECT(source=path)))), keep)
    t.add("library", scenarios.SHOWING_DEFAULT())
    t.add("catalog", vramdesk.services.catalog.RESOURCES_MISSING(folders=f"{path}, {tmp_path}"), keep)
    # the HF cache and the saved answers: where weights were priced from, and why they were estimated
    t.add("facts", resolve.GGUF_IN_CACHE(name="model-Q4_K_M.gguf"))
    for n in (1, 3):
        t.add("facts", (resolve.HEADERS_IN_CACHE_N if n != 1 else resolve.HEADERS_IN_CACHE)(files=n))
        t.add("facts", (resolve.HEADERS_ON_HUB_N if n != 1 else resolve.HEADERS_ON_HUB)(repo=repo, files=n), keep)
    t.add("facts", resolve.HEADERS_SAVED_ON(repo=repo, date="2025-01-31"), keep)
    t.add("facts", resolve.CONFIG_SAVED_ON(date="2025-01-31"))
    t.add("facts", resolve.SNAPSHOT_INCOMPLETE(error=said(LocalModelError(local.NO_SUCH_FILE(path=path)))), keep)
    t.add("facts", resolve.OFFLINE_HEADERS())
    t.add("facts", resolve.ESTIMATED(error=hub.FAILED(what=what, problem=hub.TIMEOUT(where=where))), keep)
    t.add("facts", resolve.TIED_COPY(params=262_668_288))
    t.add("facts", resolve.STORED_DIFFERS(stored=8_030_261_248, inventory=7_504_924_672))
    t.add("resolve", resolve.NO_GGUF_IN_CACHE(repo=repo), keep)
    t.add(
        "resolve", resolve.NO_CONFIG(repo=repo, error=resolve.NO_GGUF(repo=repo, found=resolve.NO_GGUF_FILES())), keep
    )
    search = vramdesk.services.search
    for message in search.CACHE_KINDS.values():
        t.add("browser", search.IN_CACHE(kind=message()))
    t.add("browser", search.LOOKED_AT())
    t.add("browser", search.LOOKED_AT_PARAMS(params="8.03 B"))
    t.add("browser", search.HUB_GGUF())
    # the browser's lines (vramdesk/ui/browser.py)
    words = [search.SOURCE_WORDS[s]() for s in search.SOURCES]
    t.add("browser", search.FOUND_IN(sources=vramdesk.core.messages.join(", ", *words)))
    t.add("browser", search.SOURCE_DETAIL(source=words[0], detail=search.BUNDLED()))


def collect(tmp: Callable[[str], Path]) -> list[tuple[str, Text, set[str]]]:
    """Every text of these layers, from the real code (``tmp(name)`` gives a fresh folder)."""
    t = Texts()
    nvml_texts(t)
    with pytest.MonkeyPatch.context() as mp:
        folder = tmp("hub")
        with hub_environment(mp, folder) as hub:
            hub_texts(t, hub, folder)
    local_texts(t, tmp("local"))
    storage_texts(t, tmp("storage"))
    deepspeed_texts(t, tmp("deepspeed"))
    catalog_texts(t)
    made_directly(t, tmp("direct"))
    return t.items
