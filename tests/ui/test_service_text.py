"""Chinese for the English texts of the services and storage layers that the window shows: the NVML detection
reason, Hub errors and search notes, model-resolution and local-file errors, the facts' notes of resolved models,
the model browser's details, and the library's notices (vramdesk/ui/core_text.py, by message id:
``resources/i18n/zh_CN.messages.services.json``).

The services and storage stay English (the command line and JSON read them); the window translates at display
time. The sweep below produces the real messages: Hub errors from the fake Hub over real HTTP, NVML reasons from
the fake NVML, local-model errors from tiny bad files, library notices from corrupted and newer-schema files. Every
message must come out with no English word left except identifiers (the same rule as tests/ui/test_core_text.py);
a new service message without a translation fails here, with the message named.
"""

from __future__ import annotations

import json
import re
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_nvml.pyfake import RTX, FakeNvml, NVMLError, NVMLError_DriverNotLoaded, NVMLError_LibraryNotFound
from fakehub import TINY_CONFIG, FakeHub, hub_environment, llama_gguf, safetensors_bytes, tiny_llama_tensors
from i18ncheck import CORE_WHITELIST, TOKEN
from i18ncheck import english_left as _english_left

from vramdesk.core.checkpoint import CheckpointError
from vramdesk.core.messages import error_text, free, join
from vramdesk.core.messages import text as message_text
from vramdesk.core.scenario import Scenario
from vramdesk.services import nvml as nv
from vramdesk.services.cache import AnswerCache
from vramdesk.services.catalog import default_catalog
from vramdesk.services.deepspeed import (
    DeepSpeedConfigError,
    apply_deepspeed,
    describe_plan,
    parse_deepspeed,
    read_deepspeed,
)
from vramdesk.services.hub import SEARCHING, HubClient, HubError, HubModel, run_with_deadline
from vramdesk.services.local import LocalModelError
from vramdesk.services.resolve import ResolveError, resolve_model
from vramdesk.services.search import hub_results, local_results
from vramdesk.storage.library import Autosave, LibraryError, ScenarioLibrary, file_text, read_entry
from vramdesk.storage.scenarios import ScenarioFileError, load_scenario
from vramdesk.ui import core_text
from vramdesk.ui.core_text import localize
from vramdesk.ui.presenter import evaluate_scenario

ZH = "zh_CN"
CAT = default_catalog()

#: the core test's identifiers, and the names these layers quote: exception classes, the Hub's and the OS's
#: terms of art, file formats, environment variables
WHITELIST = CORE_WHITELIST | {
    "NVIDIA",
    "NVML",
    "MIG",
    "nvidia-ml-py",
    "Hub",
    "Hugging",
    "Face",
    "HTTP",
    "HF_TOKEN",
    "hf",
    "safetensors",
    "JSON",
    "UTF-8",
    "vramdesk",
    "ConnectError",
    "ReadTimeout",
    "ConnectTimeout",
    "JSONDecodeError",
    "ValueError",
    "KeyError",
    "TypeError",
    "RuntimeError",
    "weight_map",
    "Errno",
    "architectures",  # a config.json key, quoted
    "gguf",  # the file extension
    "NVMe",
    "ZeRO+",  # ZeRO++ (the tokenizer splits the second plus), hpZ and MiCS: DeepSpeed's names
    "hpZ",
    "MiCS",
    "mode",  # a schema-0 field and its values, quoted
    "inference",
    "finetune",
}
_NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?(?![\w])")


def english_left(text: str, ignore: set[str]) -> list[str]:
    return _english_left(text, ignore, WHITELIST)


# ---------------------------------------------------------------------------------------------- producers


class Texts:
    """(kind, English text, words to keep) collected from the real code."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], set[str]] = {}

    def add(self, kind: str, text: str | None, keep: set[str] | frozenset[str] = frozenset()) -> None:
        assert text, kind
        self.items.setdefault((kind, text), set()).update(keep)

    def error(self, kind: str, keep: set[str], fn: Any, *exc: type[BaseException]) -> None:
        """Run ``fn``, which must fail with one of ``exc``, and keep its message."""
        with pytest.raises(exc or (Exception,)) as err:
            fn()
        self.add(kind, error_text(err.value), keep)


def nvml_texts(t: Texts) -> None:
    lib = nv.LIBRARY_NAME
    for error in (
        NVMLError_LibraryNotFound("NVML Shared Library Not Found"),
        NVMLError_DriverNotLoaded("Driver Not Loaded"),
        RuntimeError("Unknown Error"),
    ):
        t.add("nvml", nv.detect_gpus(FakeNvml([RTX], init_error=error)).reason, {lib})

    class NoPermission(NVMLError):  # noqa: N818 - pynvml's naming
        pass

    class PermissionNvml(FakeNvml):
        NVMLError_NoPermission = NoPermission

    t.add("nvml", nv.detect_gpus(PermissionNvml([RTX], init_error=NoPermission("Insufficient Permissions"))).reason)
    t.add("nvml", nv.detect_gpus(FakeNvml([])).reason)

    class BrokenGpu(FakeNvml):
        def nvmlDeviceGetName(self, h: dict[str, Any]) -> str:
            if h.get("broken"):
                raise NVMLError("GPU is lost")
            return super().nvmlDeviceGetName(h)

    two = BrokenGpu([RTX, {**RTX, "broken": True}])
    t.add("nvml", nv.detect_gpus(two).reason)  # one GPU of two unreadable
    t.add("nvml", nv.detect_gpus(BrokenGpu([{**RTX, "broken": True}])).reason)

    class CountFails(FakeNvml):
        def nvmlDeviceGetCount(self) -> int:
            raise NVMLError("Unknown Error")

    t.add("nvml", nv.detect_gpus(CountFails([RTX])).reason)


def _client(**kw: Any) -> HubClient:
    return HubClient(token=kw.pop("token", False), timeout=kw.pop("timeout", 3.0), **kw)


def hub_texts(t: Texts, hub: FakeHub, tmp_path: Path) -> None:
    host = hub.url.split("://", 1)[1]
    keep = {host, hub.url, "llama", "tiny", "zzq", "'id'", "b'NOPE'"}  # queries, a JSON key, a file's bytes
    tensors = tiny_llama_tensors()
    hub.add_model(
        "acme/tiny-llama",
        info={"downloads": 100, "safetensors": {"parameters": {"BF16": 74_048}, "total": 74_048}},
        files={"config.json": json.dumps(TINY_CONFIG), "model.safetensors": safetensors_bytes(tensors)},
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
    t.error("hub", keep, lambda: c.config("acme/bad-config"), HubError)
    t.error("hub", keep, lambda: c.config("acme/list-config"), HubError)
    t.error("hub", keep, lambda: c.gguf_header("acme/fake-gguf", "model-Q4_K_M.gguf"), HubError)
    t.error("hub", keep | {"not a repo"}, lambda: c.model_info("not a repo"), HubError)
    t.error("hub", keep, lambda: HubModel.from_api({"downloads": 3}), HubError)
    t.error("hub", keep, lambda: _client(offline=True).search("llama"), HubError)
    t.error("hub", keep, lambda: _client(endpoint="http://127.0.0.1:9").model_info("acme/tiny-llama"), HubError)
    keep.add("127.0.0.1:9")
    slow = SEARCHING(query="llama")
    # the stuck calls outlast their deadlines by a minute, so no loaded machine makes them finish in time
    t.error("hub", keep, lambda: run_with_deadline(lambda: time.sleep(60), 0.2, slow), HubError)
    cancel = threading.Event()
    cancel.set()
    t.error("hub", keep, lambda: run_with_deadline(lambda: time.sleep(2), 5, SEARCHING(query="x"), cancel))
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
    t.error("resolve", keep, lambda: resolve("acme/nope", client=_client(offline=True)), ResolveError)
    t.error("resolve", keep | {"nonsense model"}, lambda: resolve("nonsense model"), ResolveError)
    t.error("resolve", keep | {"meta-llama/Llama-3.1-8X"}, lambda: resolve("meta-llama/Llama-3.1-8X"), ResolveError)

    # what a model read from the Hub says about itself (notes and explanations in the window)
    for ref in ("acme/tiny-llama", "acme/no-weights", "acme/gguf-only"):
        facts_texts(t, resolve(ref), keep)

    # the browser's details: the Hub's results, models looked at before, the HF cache's
    for r in hub_results("acme", client=c, answers=answers).results + local_results(
        "acme", answers=answers, cache_dir=tmp_path / "hf-cache"
    ):
        if r.detail:
            t.add("browser", r.detail, keep)


def facts_texts(t: Texts, facts: Any, keep: set[str]) -> None:
    """The window's texts for a resolved model: the facts' notes (as warnings) and the weights' explanation."""
    s = Scenario.model_validate({"model": {"id": facts.model_id}, "hardware": {"gpu": "RTX 4090"}})
    ev = evaluate_scenario(s, resolve=lambda _ref: facts)
    assert ev.view is not None, ev.error
    keep = keep | {facts.model_id}
    for w in ev.view.warnings:
        t.add("facts", w, keep)
    for p in ev.view.estimate.phases:
        for comp in p.components:
            if comp.name == "weights":
                t.add("facts", comp.explain, keep)


def _gguf_split(path: Path) -> None:
    path.write_bytes(llama_gguf()[0])


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
        t.error("local", keep, lambda: resolve_model(ref, CAT), ResolveError, LocalModelError, CheckpointError)

    fails(bad("missing/config.json", None))
    fails(bad("broken/config.json", '{"model_type": "llama",}'))
    fails(bad("list/config.json", "[1, 2, 3]"))
    fails(bad("latin/config.json", b'{"a": "\xff"}'))
    fails(bad("empty/config.json", "{}"))
    fails(bad("unknown/config.json", json.dumps({"model_type": "zz-new", "architectures": ["ZzForCausalLM"]})))
    (root / "nofolder").mkdir()
    fails(str(root / "nofolder"))
    cfg = json.dumps(TINY_CONFIG)
    bad("trunc/config.json", cfg)
    bad("trunc/model.safetensors", struct.pack("<Q", 1_000) + b"{}")
    fails(str(root / "trunc"))
    bad("junk/config.json", cfg)
    bad("junk/model.safetensors", struct.pack("<Q", 8) + b"notjson!")
    fails(str(root / "junk"))
    bad("noindexmap/config.json", cfg)
    bad("noindexmap/model.safetensors.index.json", json.dumps({"metadata": {}}))
    bad("noindexmap/model-00001-of-00002.safetensors", safetensors_bytes({"x": ("BF16", (2,))}))
    fails(str(root / "noindexmap"))
    bad("shardmissing/config.json", cfg)
    weight_map = {"model.embed_tokens.weight": "model-00002-of-00002.safetensors"}
    bad("shardmissing/model.safetensors.index.json", json.dumps({"weight_map": weight_map}))
    bad("shardmissing/model-00001-of-00002.safetensors", safetensors_bytes({"x": ("BF16", (2,))}))
    fails(str(root / "shardmissing"))
    bad("outside/config.json", cfg)
    bad("outside/model.safetensors.index.json", json.dumps({"weight_map": {"x": "../evil.safetensors"}}))
    fails(str(root / "outside"))
    fails(bad("magic.gguf", b"GGML" + b"\0" * 60))
    fails(bad("short.gguf", b"GGUF"))
    fails(bad("old.gguf", b"GGUF" + struct.pack("<IQQ", 1, 0, 0)))
    fails(bad("noarch.gguf", b"GGUF" + struct.pack("<IQQ", 3, 0, 0)))
    fails(bad("missing.gguf", None))
    _gguf_split(root / "split-00001-of-00002.gguf")
    fails(str(root / "split-00001-of-00002.gguf"))
    # a model read from local files: its notes
    good = root / "good"
    good.mkdir()
    (good / "config.json").write_text(cfg)
    (good / "model.safetensors").write_bytes(safetensors_bytes(tiny_llama_tensors()))
    facts_texts(t, resolve_model(str(good), CAT), keep)
    (root / "good.gguf").write_bytes(llama_gguf()[0])
    facts_texts(t, resolve_model(str(root / "good.gguf"), CAT), keep)


def storage_texts(t: Texts, tmp_path: Path) -> None:
    root = tmp_path / "library"
    lib = ScenarioLibrary(root)
    # the files' own folder and contents, and the saved model's id
    keep = {str(tmp_path), str(root), "'two'", "'serve'", "Qwen/Qwen3-8B"}
    good = Scenario.model_validate({"model": {"id": "Qwen/Qwen3-8B"}})
    lib.save(good, name="kept")
    (root / "notjson.vramdesk.json").write_text("{oops")
    (root / "list.vramdesk.json").write_text("[]")
    (root / "binary.vramdesk.json").write_bytes(b"\xff\xfe\x00")
    (root / "invalid.vramdesk.json").write_text(json.dumps({"model": {"id": "x/y"}, "workload": {"batch": 0}}))
    (root / "badversion.vramdesk.json").write_text(json.dumps({"schema_version": "two", "model": {"id": "x/y"}}))
    (root / "v0.vramdesk.json").write_text(json.dumps({"schema_version": 0}))
    (root / "v0mode.vramdesk.json").write_text(json.dumps({"schema_version": 0, "model_id": "x/y", "mode": "serve"}))
    newer = json.loads(file_text(good))
    newer.update(schema_version=99, future_field=1)
    (root / "newer.vramdesk.json").write_text(json.dumps(newer))
    scan = lib.scan()
    assert len(scan.quarantined) == 7, scan.quarantined
    for q in scan.quarantined:
        t.add("library", q.reason, keep)
    (note,) = [e.note for e in scan.entries if e.note]
    t.add("library", note, keep)
    newer_entry = next(e for e in scan.entries if e.read_only)
    t.error("library", keep, lambda: lib.update(newer_entry.id, good), LibraryError)
    t.error("library", keep, lambda: lib.get("gone.vramdesk.json"), LibraryError)
    t.error("library", keep, lambda: lib.get("../x"), LibraryError)
    kept = next(e for e in scan.entries if not e.read_only)
    t.error("library", keep, lambda: lib.rename(kept.id, "  "), LibraryError)
    t.error("library", keep, lambda: lib.import_file(root / "newer.vramdesk.json"), ScenarioFileError)
    t.error("library", keep, lambda: load_scenario(root / "newer.vramdesk.json"), ScenarioFileError)
    t.error("library", keep, lambda: read_entry(tmp_path / "absent.json"), ScenarioFileError)
    big = tmp_path / "big.json"
    big.write_text(" " * 3_000_000)
    t.error("library", keep, lambda: load_scenario(big), ScenarioFileError)
    # a damaged autosave is moved aside (nothing to offer back)
    store = Autosave(tmp_path / "autosave")
    store.folder.mkdir()
    (store.folder / "1-2.json").write_text("{")
    assert store.orphans() == [] and (store.folder / "corrupted").is_dir()


def deepspeed_texts(t: Texts, tmp_path: Path) -> None:
    """What File > Apply DeepSpeed config… can show: the plan's summary and notes, and every refusal."""
    keep = {str(tmp_path)}
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
    for config in (full, {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}, {}, zeropp):
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
        ({"optimizer": {"type": "Muon"}}, {"'Muon'"} | names),
    ]
    for config, quoted in bad:
        t.error("deepspeed", quoted, lambda c=config: parse_deepspeed(c), DeepSpeedConfigError)
    (tmp_path / "bad.json").write_text("{oops")
    (tmp_path / "big.json").write_text(" " * 2_000_000)
    for name in ("bad.json", "big.json", "absent.json"):
        t.error("deepspeed", keep, lambda n=name: read_deepspeed(tmp_path / n), DeepSpeedConfigError)
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


@pytest.fixture(scope="module")
def texts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[tuple[str, str, set[str]]]]:
    t = Texts()
    nvml_texts(t)
    with pytest.MonkeyPatch.context() as mp:
        tmp = tmp_path_factory.mktemp("hub")
        with hub_environment(mp, tmp) as hub:
            hub_texts(t, hub, tmp)
    local_texts(t, tmp_path_factory.mktemp("local"))
    storage_texts(t, tmp_path_factory.mktemp("storage"))
    deepspeed_texts(t, tmp_path_factory.mktemp("deepspeed"))
    for r in local_results("", limit=200):
        if r.detail:
            t.add("browser", r.detail)
    yield [(k, text, keep) for (k, text), keep in t.items.items()]


def test_the_sweep_covers_every_kind_of_service_text(texts) -> None:
    kinds = Counter(k for k, _, _ in texts)
    assert kinds["nvml"] >= 8 and kinds["hub"] >= 25 and kinds["note"] >= 2 and kinds["resolve"] >= 8
    assert kinds["local"] >= 18 and kinds["library"] >= 15 and kinds["facts"] >= 6 and kinds["browser"] >= 5
    assert kinds["deepspeed"] >= 18


def test_every_service_text_the_window_shows_is_translated(texts) -> None:
    untranslated = []
    for kind, text, keep in texts:
        zh = localize(text, ZH)
        left = english_left(zh, keep)
        if left:
            untranslated.append(f"[{kind}] {text!r}\n    -> {zh!r}\n    English left: {sorted(set(left))}")
    assert not untranslated, f"{len(untranslated)} service texts without a translation:\n" + "\n".join(untranslated)


def test_numbers_identifiers_and_names_survive_translation(texts) -> None:
    """Every number, identifier (bf16, config.json, HF_HUB_OFFLINE, HTTP codes), path, repo id and host of the
    English text is in the Chinese one, unchanged."""
    for _kind, text, keep in texts:
        zh = localize(text, ZH)
        assert Counter(_NUMBER.findall(zh)) == Counter(_NUMBER.findall(text)), (text, zh)
        for name in keep:
            if name in text:
                assert name in zh, (name, text, zh)
        for tok in TOKEN.findall(text):
            if re.search(r"[\d_.]", tok) and len(tok) > 2:
                assert tok in zh, (tok, text, zh)


def test_a_service_message_without_a_translation_is_named() -> None:
    """The check can fail: a made-up message, and a known one joined with an English tail, keep their English."""
    made_up = localize(message_text("test.fishing", "the NVIDIA driver went fishing"), ZH)
    assert english_left(made_up, set()) == ["the", "driver", "went", "fishing"]
    zh = localize(join("; ", nv.NOT_LOADED(), free("the fan is on fire")), ZH)
    assert zh.startswith("NVIDIA 驱动已安装，但尚未加载")
    assert english_left(zh, set()) == ["the", "fan", "is", "on", "fire"]


def test_english_texts_pass_through_unchanged(texts) -> None:
    for _kind, text, _ in texts:
        assert localize(text) == text and localize(text, "en") == text


def test_examples_read_as_they_should() -> None:
    from vramdesk.services import hub

    assert localize(nv.NO_DRIVER(library="libnvidia-ml.so.1"), ZH) == "未找到 NVIDIA 驱动（libnvidia-ml.so.1）"
    limited = hub.FAILED(what=hub.SEARCHING(query="qwen"), problem=hub.RATE_LIMITED(where="huggingface.co"))
    assert localize(limited, ZH) == "在 Hub 上搜索“qwen”：被 huggingface.co 限流（HTTP 429）；请等一分钟", str(limited)
    assert str(limited) == "searching 'qwen' on the Hub: rate limited by huggingface.co (HTTP 429); wait a minute"


def test_the_service_tables_ship_next_to_the_window_tables() -> None:
    core_text.translator.cache_clear()
    table = core_text.translator(ZH)
    assert table is not None
    assert table.messages["nvml.not_loaded"] == "NVIDIA 驱动已安装，但尚未加载"
    names = [p.name for p in core_text.message_files(ZH)]
    assert "zh_CN.messages.services.json" in names and len(table.messages) > 800
