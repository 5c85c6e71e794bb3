"""Chinese for the English texts of the services and storage layers that the window shows: the NVML detection
reason, Hub errors and search notes, model-resolution and local-file errors, the facts' notes of resolved models
and the estimate's warnings and weights explanation for them, the model browser's details, the library's notices,
DeepSpeed notes and refusals, and the catalog's notes (vramdesk/ui/core_text.py, by message id:
``resources/i18n/zh_CN.messages.services.json``).

The services and storage stay English (the command line and JSON read them); the window translates at display
time. The sweep (tests/servicesweep.py, shared with tests/services/test_message_ids_services.py, which checks the
texts' ids, that numbers and names survive and that the English is unchanged) produces the real messages: Hub
errors from the fake Hub over real HTTP, NVML reasons from the fake NVML, local-model errors from tiny bad files,
library notices from corrupted and newer-schema files. Every message must come out with no English word left except
identifiers, the names it quotes and the words it keeps as said (the same rule as tests/ui/test_core_text.py), other
layers' words included; a new service message without a translation fails here, with the message named.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from i18ncheck import CORE_WHITELIST
from i18ncheck import english_left as _english_left
from servicesweep import collect

from vramdesk.core.messages import Text, free, join
from vramdesk.core.messages import text as message_text
from vramdesk.services import nvml as nv
from vramdesk.ui import core_text
from vramdesk.ui.core_text import localize

ZH = "zh_CN"

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
    "Content-Range",  # an HTTP header
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
    "true",  # a config.json value, quoted
    "null",
    "llama",  # a query as typed, a config's model_type
    "gguf",  # the file extension
    "NVMe",
    "ZeRO+",  # ZeRO++ (the tokenizer splits the second plus), hpZ and MiCS: DeepSpeed's names
    "hpZ",
    "MiCS",
    "mode",  # a schema-0 field and its values, quoted
    "inference",
    "finetune",
}


def english_left(text: str, ignore: set[str]) -> list[str]:
    return _english_left(text, ignore, WHITELIST)


@pytest.fixture(scope="module")
def texts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[tuple[str, Text, set[str]]]]:
    yield collect(tmp_path_factory.mktemp)


def test_every_service_text_the_window_shows_is_translated(texts) -> None:
    untranslated = []
    for kind, text, keep in texts:
        zh = localize(text, ZH)
        left = english_left(zh, keep)
        if left:
            untranslated.append(f"[{kind}] {text!r}\n    -> {zh!r}\n    English left: {sorted(set(left))}")
    assert not untranslated, f"{len(untranslated)} service texts without a translation:\n" + "\n".join(untranslated)


def test_a_service_message_without_a_translation_is_named() -> None:
    """The check can fail: a made-up message, and a known one joined with an English tail, keep their English."""
    made_up = localize(message_text("test.fishing", "the NVIDIA driver went fishing"), ZH)
    assert english_left(made_up, set()) == ["the", "driver", "went", "fishing"]
    zh = localize(join("; ", nv.NOT_LOADED(), free("the fan is on fire")), ZH)
    assert zh.startswith("NVIDIA 驱动已安装，但尚未加载")
    assert english_left(zh, set()) == ["the", "fan", "is", "on", "fire"]


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
