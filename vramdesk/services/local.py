"""Local model files: a config.json, a model folder (config + safetensors headers), a ``.gguf`` file.

Only headers are read, with bounded reads: a safetensors JSON header of at most 100 MiB, a GGUF header of at
most 256 MiB (real ones are a few MB, most of it the tokenizer, which is skipped rather than decoded). Tensor
data is never read, and nothing from a model repository is ever executed (no ``trust_remote_code``).
Every error names the file and what is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from vramdesk.core import jsonsafe
from vramdesk.core.checkpoint import (
    MAX_SAFETENSORS_HEADER,
    CheckpointError,
    NeedMoreBytesError,
    parse_safetensors_header,
)
from vramdesk.core.gguf_header import GgufHeader, parse_gguf_header
from vramdesk.core.messages import Message
from vramdesk.error_words import os_reason, said

#: a config.json larger than this is not a config
MAX_CONFIG_BYTES = 8 * 1024 * 1024
#: a safetensors index larger than this is not an index (DeepSeek-V3's is 9 MB)
MAX_INDEX_BYTES = 64 * 1024 * 1024
#: the most header bytes read from a GGUF file (local or remote)
MAX_GGUF_HEADER = 256 * 1024 * 1024
#: first read of a GGUF header; doubled while the header goes on
GGUF_FIRST_READ = 4 * 1024 * 1024

SAFETENSORS_INDEX = "model.safetensors.index.json"
_SPLIT_RE = re.compile(r"^(?P<stem>.*)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$")

Entries = dict[str, tuple[str, tuple[int, ...]]]

NO_SUCH_FILE = Message("local.no_such_file", "{path}: no such file")
TOO_LARGE_CONFIG = Message("local.too_large.config", "{path}: {size:,} bytes is too large for a config.json")
TOO_LARGE_INDEX = Message("local.too_large.index", "{path}: {size:,} bytes is too large for a safetensors index")
CANNOT_READ = Message("local.cannot_read", "{path}: cannot read ({reason})")
FILE_FAILED = Message("local.file_failed", "{path}: {problem}")
NO_CONFIG_IN_FOLDER = Message("local.folder_without_config", "{path}: folder has no config.json")
CONFIG_NOT_OBJECT = Message("local.config_not_object", "{path}: a config.json must hold a JSON object, not {kind}")
#: the JSON value a config.json held instead of an object, by its Python type
_KINDS = {
    m.template: m
    for m in (
        Message("local.kind.list", "list"),
        Message("local.kind.str", "str"),
        Message("local.kind.int", "int"),
        Message("local.kind.float", "float"),
        Message("local.kind.bool", "bool"),
        Message("local.kind.none", "NoneType"),
    )
}
TRUNCATED_SAFETENSORS = Message("local.truncated_safetensors", "{path}: truncated safetensors header")
NO_WEIGHT_MAP = Message("local.no_weight_map", "{path}: no 'weight_map' object of tensor name -> file name")
SHARD_OUTSIDE = Message("local.shard_outside", "{path}: shard name {name!r} points outside the folder")
SHARD_MISSING = Message("local.shard_missing", "{path}: shard listed in {index} is missing (incomplete download?)")
NO_SAFETENSORS = Message(
    "local.no_safetensors", "no safetensors files in the folder: weights estimated from config.json"
)
NO_SAFETENSORS_GGUF = Message(
    "local.no_safetensors.gguf",
    "no safetensors files in the folder: weights estimated from config.json (it also holds {count} GGUF file(s): "
    "pass one of them to use its exact tensors)",
)
SOURCE_GGUF = Message("local.source.gguf", "GGUF header of {name}")
SOURCE_GGUF_SPLIT = Message("local.source.gguf_split", "GGUF header of {name} ({files} split files)")
SOURCE_HEADERS = Message("local.source.safetensors", "safetensors headers in {path} ({files} file)")
SOURCE_HEADERS_N = Message("local.source.safetensors.files", "safetensors headers in {path} ({files} files)")
TRUNCATED_HEADER = Message("local.truncated_header", "truncated header")
HEADER_OVER_LIMIT = Message("local.header_over_limit", "header is larger than {limit:,} bytes (limit)")
HEADER_PAST = Message("local.header_past", "truncated: the header continues past byte {end:,}")
DATA_PAST_END = Message(
    "local.data_past_end",
    "{path}: truncated: tensor data should end at byte {end:,} but the file has {size:,} (incomplete download?)",
)
SPLIT_MISSING = Message("local.split_missing", "{path}: split file is missing (needed with {name})")


class LocalModelError(ValueError):
    """A local file that cannot be used; the message names the path and the problem (a
    :class:`~vramdesk.core.messages.Text`, ``args[0]``)."""


def _read_json(path: Path, limit: int, too_large: Message) -> Any:
    if not path.is_file():
        raise LocalModelError(NO_SUCH_FILE(path=path))
    size = path.stat().st_size
    if size > limit:
        raise LocalModelError(too_large(path=path, size=size))
    try:
        return jsonsafe.loads(path.read_bytes(), source=str(path))
    except OSError as err:
        raise LocalModelError(CANNOT_READ(path=path, reason=os_reason(err))) from err
    except jsonsafe.JsonError as err:  # NaN, Infinity, deep nesting, non-UTF-8: named, one line
        raise LocalModelError(said(err)) from err


def read_config(path: Path) -> dict[str, Any]:
    path = Path(path)
    if path.is_dir():
        cfg = path / "config.json"
        if not cfg.is_file():
            raise LocalModelError(NO_CONFIG_IN_FOLDER(path=path))
        path = cfg
    data = _read_json(path, MAX_CONFIG_BYTES, TOO_LARGE_CONFIG)
    if not isinstance(data, dict):
        kind = type(data).__name__
        raise LocalModelError(CONFIG_NOT_OBJECT(path=path, kind=_KINDS[kind]() if kind in _KINDS else kind))
    return data


def looks_like_path(ref: str) -> bool:
    return ref.endswith((".json", ".gguf")) or ref.startswith((".", "/", "~")) or "\\" in ref or Path(ref).exists()


# ----------------------------------------------------------------------------------------------
# safetensors


def read_safetensors_header(path: Path, max_header: int = MAX_SAFETENSORS_HEADER) -> Entries:
    """{tensor name: (dtype, shape)} from one .safetensors file, reading the header only."""
    path = Path(path)
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(8)
            if len(head) == 8:
                n = int.from_bytes(head, "little")
                if n <= max_header:
                    head += fh.read(n)
    except OSError as err:
        raise LocalModelError(CANNOT_READ(path=path, reason=os_reason(err))) from err
    try:
        entries, _ = parse_safetensors_header(head, file_size=size, max_header=max_header)
    except NeedMoreBytesError as err:  # pragma: no cover - file_size makes short reads errors
        raise LocalModelError(TRUNCATED_SAFETENSORS(path=path)) from err
    except CheckpointError as err:
        raise LocalModelError(FILE_FAILED(path=path, problem=said(err))) from err
    return entries


def safetensors_files(folder: Path) -> list[Path]:
    """The weight files of a model folder: those the index names, else ``model*.safetensors``, else any
    ``*.safetensors`` (Mistral's ``consolidated.safetensors`` only when nothing else is there)."""
    folder = Path(folder)
    index = folder / SAFETENSORS_INDEX
    if index.is_file():
        data = _read_json(index, MAX_INDEX_BYTES, TOO_LARGE_INDEX)
        wm = data.get("weight_map") if isinstance(data, dict) else None
        if not isinstance(wm, dict) or not all(isinstance(v, str) for v in wm.values()):
            raise LocalModelError(NO_WEIGHT_MAP(path=index))
        files = []
        for name in sorted(set(wm.values())):
            if "/" in name or "\\" in name or name.startswith("."):
                raise LocalModelError(SHARD_OUTSIDE(path=index, name=name))
            files.append(folder / name)
        return files
    model_files = sorted(folder.glob("model*.safetensors"))
    if model_files:
        return model_files
    return sorted(p for p in folder.glob("*.safetensors") if p.is_file())


def read_folder_headers(folder: Path) -> tuple[Entries, list[Path]]:
    """All tensors of a folder's safetensors files (sharded or not); a missing shard is an error."""
    files = safetensors_files(folder)
    entries: Entries = {}
    for f in files:
        if not f.is_file():
            raise LocalModelError(SHARD_MISSING(path=f, index=SAFETENSORS_INDEX))
        entries.update(read_safetensors_header(f))
    return entries, files


@dataclass(frozen=True)
class LocalModel:
    """What a model folder or a GGUF file tells: its config and the tensors it stores."""

    path: Path
    config: dict[str, Any]
    #: "safetensors", "gguf" or "" (a config without readable weights)
    kind: str
    safetensors: Entries | None = None
    gguf: GgufHeader | None = None
    files: tuple[Path, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def source(self) -> str:
        n = len(self.files)
        if self.kind == "gguf":
            return SOURCE_GGUF_SPLIT(name=self.path.name, files=n) if n > 1 else SOURCE_GGUF(name=self.path.name)
        if self.kind == "safetensors":
            return (SOURCE_HEADERS_N if n != 1 else SOURCE_HEADERS)(path=str(self.path), files=n)
        return str(self.path)


def read_model_folder(folder: Path) -> LocalModel:
    folder = Path(folder)
    config = read_config(folder)
    entries, files = read_folder_headers(folder)
    if entries:
        return LocalModel(folder, config, "safetensors", safetensors=entries, files=tuple(files))
    ggufs = sorted(folder.glob("*.gguf"))
    note = NO_SAFETENSORS_GGUF(count=len(ggufs)) if ggufs else NO_SAFETENSORS()
    return LocalModel(folder, config, "", notes=(note,))


# ----------------------------------------------------------------------------------------------
# GGUF


def parse_growing(
    fetch: Callable[[int, int], bytes], total: int | None, first: int = GGUF_FIRST_READ, cap: int = MAX_GGUF_HEADER
) -> GgufHeader:
    """Parse a GGUF header from a source read in growing pieces (``fetch(start, end)`` -> bytes)."""
    want = first if total is None else min(first, total)
    buf = bytearray(fetch(0, want))
    while True:
        try:
            return parse_gguf_header(buf, total_size=total)
        except NeedMoreBytesError as more:
            if total is not None and len(buf) >= total:  # pragma: no cover - parse reports truncation itself
                raise CheckpointError(TRUNCATED_HEADER()) from more
            if more.needed > cap:
                raise CheckpointError(HEADER_OVER_LIMIT(limit=cap)) from more
            want = min(max(more.needed, 2 * len(buf)), cap)
            if total is not None:
                want = min(want, total)
            chunk = fetch(len(buf), want)
            if not chunk:
                raise CheckpointError(HEADER_PAST(end=len(buf))) from more
            buf += chunk


def _read_one_gguf(path: Path) -> GgufHeader:
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:

            def fetch(start: int, end: int) -> bytes:
                fh.seek(start)
                return fh.read(end - start)

            header = parse_growing(fetch, size)
    except OSError as err:
        raise LocalModelError(CANNOT_READ(path=path, reason=os_reason(err))) from err
    except CheckpointError as err:
        raise LocalModelError(FILE_FAILED(path=path, problem=said(err))) from err
    try:
        end = header.data_end()
    except CheckpointError as err:
        raise LocalModelError(FILE_FAILED(path=path, problem=said(err))) from err
    if end > size:
        raise LocalModelError(DATA_PAST_END(path=path, end=end, size=size))
    return header


def gguf_split_files(path: Path) -> list[Path]:
    """All files of a split GGUF (``name-00001-of-00003.gguf``), or just ``path``."""
    m = _SPLIT_RE.match(path.name)
    if not m:
        return [path]
    count = int(m.group("count"))
    return [path.with_name(f"{m.group('stem')}-{i:05d}-of-{count:05d}.gguf") for i in range(1, count + 1)]


def read_gguf(path: Path) -> tuple[GgufHeader, tuple[Path, ...]]:
    """The header of a .gguf file; for split files, the first split's metadata with every split's tensors."""
    path = Path(path)
    if not path.is_file():
        raise LocalModelError(NO_SUCH_FILE(path=path))
    files = gguf_split_files(path)
    headers = []
    for f in files:
        if not f.is_file():
            raise LocalModelError(SPLIT_MISSING(path=f, name=path.name))
        headers.append(_read_one_gguf(f))
    first = headers[0]
    if len(headers) > 1:
        first = replace(first, tensors=tuple(t for h in headers for t in h.tensors))
    return first, tuple(files)


def read_gguf_model(path: Path) -> LocalModel:
    from vramdesk.core.gguf_header import gguf_to_config

    path = Path(path)
    header, files = read_gguf(path)
    try:
        config = gguf_to_config(header)
    except CheckpointError as err:
        raise LocalModelError(FILE_FAILED(path=path, problem=said(err))) from err
    return LocalModel(path, config, "gguf", gguf=header, files=files)
