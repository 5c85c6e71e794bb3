"""The services' and storage's texts carry message ids (vramdesk/core/messages.py), so the window translates them by
id (resources/i18n/zh_CN.messages.services.json) rather than by regular expressions.

The texts are built by the real code paths (the sweep in tests/servicesweep.py, shared with
tests/ui/test_service_text.py): NVML reasons from the fake NVML, Hub errors from the fake Hub over real HTTP,
model-resolution and local-file errors from tiny bad files, the facts' notes of resolved models and the window's
warnings for them, the library's notices from corrupted and newer-schema files, DeepSpeed notes and refusals, the
catalog's notes and the browser's details. Each must:

* have an id in every piece of its own (a piece without one is another layer's or a library's words, never one of
  these modules' sentences), and a Chinese template with the English one's placeholders for every id it uses;
* read in Chinese with no English word left but identifiers and names, and keep every number;
* keep its id where the window gets it: an exception's ``args[0]``, a result's field, the probe child's answer;
* stay the same English text in English, with every placeholder filled.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_nvml.pyfake import RTX, FakeNvml
from i18ncheck import CORE_WHITELIST, TOKEN, english_left, without_id
from servicesweep import CAT, collect

import vramdesk.core.messages
import vramdesk.error_words
import vramdesk.services.catalog
import vramdesk.services.deepspeed
import vramdesk.services.hub
import vramdesk.services.local
import vramdesk.services.nvml as nv
import vramdesk.services.resolve
import vramdesk.services.search

# (services.trace and storage.measurement: their ids have Chinese in this area's table, so they are imported
# here to be known; tests/services/test_trace.py and tests/storage check their texts)
import vramdesk.services.trace
import vramdesk.storage.library
import vramdesk.storage.measurement
import vramdesk.storage.scenarios
from vramdesk.core.gpu import GIB, MIB
from vramdesk.core.messages import MESSAGES, Message, Text, fields
from vramdesk.error_words import redact_text, said
from vramdesk.services.hub import HubError
from vramdesk.services.resolve import ResolveError, resolve_model
from vramdesk.ui.core_text import localize, message_files, message_table

ZH = "zh_CN"
#: the modules whose messages this file checks (their ids start with these prefixes)
MODULES = (
    vramdesk.error_words,
    vramdesk.services.catalog,
    vramdesk.services.deepspeed,
    vramdesk.services.hub,
    vramdesk.services.local,
    nv,
    vramdesk.services.resolve,
    vramdesk.services.search,
    vramdesk.storage.library,
    vramdesk.storage.scenarios,
)
PREFIXES = ("hub.", "search.", "nvml.", "local.", "resolve.", "catalog.", "deepspeed.", "library.", "scenarios.")
PREFIXES += ("paths.",)
TABLE = "zh_CN.messages.services.json"

#: the core's identifiers, and the names these layers quote: the Hub's and the OS's terms, formats, variables
WHITELIST = CORE_WHITELIST | {
    "NVIDIA",
    "NVML",
    "nvidia-ml-py",
    "Hub",
    "Hugging",
    "Face",
    "HTTP",
    "HF_TOKEN",
    "safetensors",
    "JSON",
    "vramdesk",
    "Errno",
    "ConnectError",
    "ValueError",
    "weight_map",
    "Content-Range",
    "gguf",
    "NVMe",
    "ZeRO+",
    "hpZ",
    "MiCS",
    "mode",
    "inference",
    "finetune",
    "SIGKILL",
    "SIGSEGV",
    "none",  # quoted values of a DeepSpeed key
    "cpu",
    "nvme",
    "true",
    "false",
    "null",
    "llama",
    "architectures",  # a config.json key, quoted
}
_NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?(?![\w])")


@pytest.fixture(scope="module")
def texts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[tuple[str, Text, set[str]]]]:
    yield collect(tmp_path_factory.mktemp)


# ---------------------------------------------------------------------------------------------- helpers


def _ids(text: str) -> set[str]:
    if not isinstance(text, Text):
        return set()
    out = {text.id} if text.id else set()
    for part in text.parts:
        out |= _ids(part)
    for value in text.args.values():
        out |= _ids(value)
    return out


def _ours() -> dict[str, str]:
    return {k: v for k, v in MESSAGES.items() if k.startswith(PREFIXES)}


def _as_pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"\{[^{}]*\}", template)
    return re.compile(".+?".join(re.escape(p) for p in parts), re.DOTALL)


# ---------------------------------------------------------------------------------------------- tests


def test_the_sweep_covers_every_kind_of_text(texts) -> None:
    kinds = Counter(k for k, _, _ in texts)
    assert kinds["nvml"] >= 20 and kinds["hub"] >= 25 and kinds["note"] >= 6 and kinds["resolve"] >= 10
    assert kinds["local"] >= 18 and kinds["library"] >= 20 and kinds["facts"] >= 8 and kinds["browser"] >= 5
    assert kinds["deepspeed"] >= 25 and kinds["catalog"] >= 8
    used = set().union(*(_ids(text) for _, text, _ in texts))
    assert not set(_ours()) - used, sorted(set(_ours()) - used)


def test_every_piece_of_these_layers_has_an_id(texts) -> None:
    """A piece without an id is another layer's or a library's words (a JSON parser's, pydantic's, the network's),
    never a sentence of these modules."""
    # (a template that is all placeholders and punctuation would match anything; the OS's words are also a
    # library's: httpx says "[Errno 111] Connection refused" too)
    ours = [
        (mid, _as_pattern(template))
        for mid, template in _ours().items()
        if re.search(r"[A-Za-z]{2}", re.sub(r"\{[^{}]*\}", "", template)) and not mid.startswith("paths.os.")
    ]
    wrong = []
    for kind, text, _keep in texts:
        for piece in without_id(text):
            hits = [mid for mid, pattern in ours if pattern.fullmatch(piece)]
            if hits:
                wrong.append(f"[{kind}] {piece!r} is {hits}")
    assert not wrong, "\n".join(wrong)


def test_every_message_has_a_chinese_template_with_the_same_placeholders(texts) -> None:
    table = message_table(ZH)
    for mid, template in sorted(_ours().items()):
        assert mid in table, f"{mid} has no Chinese template"
        assert fields(table[mid]) == fields(template), mid
    for _kind, text, _keep in texts:
        assert _ids(text) <= set(table), (text, _ids(text) - set(table))
    ours = json.loads(next(p for p in message_files(ZH) if p.name == TABLE).read_text(encoding="utf-8"))
    assert {k for k in ours if not k.startswith("_")} <= set(MESSAGES), "Chinese for ids no module defines"


def test_every_text_reads_in_chinese(texts) -> None:
    untranslated = []
    for kind, text, keep in texts:
        zh = localize(text, ZH)
        # another layer's words (free pieces) are that layer's to translate
        left = english_left(zh, keep | set(without_id(text)), WHITELIST)
        if left:
            untranslated.append(f"[{kind}] {text!r}\n    -> {zh!r}\n    English left: {sorted(set(left))}")
    assert not untranslated, f"{len(untranslated)} texts without a translation:\n" + "\n".join(untranslated)


def test_numbers_identifiers_and_names_survive(texts) -> None:
    for _kind, text, keep in texts:
        zh = localize(text, ZH)
        assert Counter(_NUMBER.findall(zh)) == Counter(_NUMBER.findall(text)), (text, zh)
        for name in keep:
            if name in text:
                assert name in zh, (name, text, zh)
        for tok in TOKEN.findall(text):
            # (a number with its unit word, "32-byte", reads "32 字节": the number is checked above)
            if re.search(r"[\d_.]", tok) and len(tok) > 2 and not re.fullmatch(r"\d+-[a-z]+", tok):
                assert tok in zh, (tok, text, zh)


def test_english_is_unchanged(texts) -> None:
    for _kind, text, _keep in texts:
        assert localize(text) == text and localize(text, "en") == text  # the window's default language too
        assert re.search(r"\{[a-z_0-9]+(?:[:!][^{}]*)?\}", text) is None, text  # every placeholder filled


def test_the_id_reaches_the_window() -> None:
    """The fit verdict's holder and free note (GpuSpec), the facts' notes, a refusal's args[0]."""
    gpu = nv.DetectedGpu(0, "NVIDIA GeForce RTX 4090", 24 * GIB, 20 * GIB, 16 * GIB, (nv.GpuProcess(7, "py", GIB),))
    spec = nv.to_gpu_spec(gpu)
    assert isinstance(spec.held_by, Text) and spec.held_by.id == "nvml.holder.named"
    assert isinstance(spec.free_note, Text) and spec.free_note.id == "nvml.free_note"
    notes = CAT.facts("Qwen/Qwen3-8B").notes
    assert notes and all(isinstance(n, Text) and n.id.startswith("catalog.") for n in notes)
    with pytest.raises(ResolveError) as info:
        resolve_model("nonsense model", CAT)
    refusal = info.value.args[0]
    assert isinstance(refusal, Text) and [p.id for p in refusal.parts] == ["catalog.model_unknown", "resolve.give_ref"]


def test_the_probe_child_s_answer_keeps_the_ids() -> None:
    """The texts cross the process boundary: the probe prints them with their ids, the parent reads them back."""
    overfull = {**RTX, "used": 30 * 1024 * MIB}
    found = nv.detect_gpus(FakeNvml([overfull]))
    assert isinstance(found.reason, Text) and isinstance(found.gpus[0].note, Text)
    line = json.dumps(found.to_probe_json())
    back = nv._answer(0, "noise\n" + line + "\n", "")
    assert back == found
    assert isinstance(back.reason, Text) and back.reason.parts == () and back.reason.id == "nvml.gpu_problem"
    assert back.gpus[0].note.id == "nvml.free_note.reserved"  # type: ignore[union-attr]
    assert localize(back.reason, ZH) == localize(found.reason, ZH)
    # the command line's JSON is as it was; a doctored answer is read as plain English
    assert set(found.to_json()) == {"gpus", "reason", "driver_version"}
    doctored = json.loads(line)
    doctored["reason_text"]["args"]["index"] = {"value": 9}
    plain = nv._answer(0, json.dumps(doctored), "").reason
    assert plain == found.reason and not isinstance(plain, Text)
    assert nv.load_text({"english": "x"}, "x") == "x"


def test_redaction_keeps_the_ids_and_never_the_secret() -> None:
    url = "https://user:s3cret@mirror.example/api?token=abc"
    asking = Message("test.services.asking", "asking {url} now")
    hub = vramdesk.services.hub
    err = HubError("server", hub.FAILED(what=asking(url=url), problem=hub.CANCELLED()))
    assert str(err) == "asking https://***@mirror.example/api?token=*** now: cancelled"
    assert isinstance(err.args[0], Text) and err.args[0].id == "hub.failed"
    assert "s3cret" not in localize(err.message, ZH) and "abc" not in localize(err.message, ZH)
    # where cleaning the pieces would not give the same English as cleaning the whole, the whole wins (no id)
    glued = HubError(
        "server", hub.FAILED(what=Message("test.services.at_end", "asking {url}")(url=url), problem=hub.CANCELLED())
    )
    assert "abc" not in glued.message and glued.message.id == "" and "abc" not in localize(glued.message, ZH)
    assert redact_text("hf_" + "a" * 30) == "hf_***"
    assert (
        said(KeyError("k")) == "'k'" and said(OSError(2, "No such file or directory", "/x")).id == "paths.os.error_file"
    )


def test_the_ui_files_localize_texts_not_compositions() -> None:
    """The window files that show these layers' texts never localize an f-string or a concatenation, and never a
    ``str(err)`` (which loses the id)."""
    root = Path(__file__).resolve().parents[2] / "vramdesk" / "ui"
    bad = re.compile(r"localize\((?:f[\"']|str\(|tr\([^)]*\)\s*\+|[^()]*\+)")
    for name in ("browser.py", "versions.py", "compare.py", "window_library.py", "app.py"):
        text = (root / name).read_text(encoding="utf-8")
        assert not bad.search(text), (name, bad.search(text))
