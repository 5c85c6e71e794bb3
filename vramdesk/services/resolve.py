"""Model reference -> ModelFacts: the bundled catalog, local files, the HF cache, saved answers, the Hub.

Order for a repo id (``owner/name``): the catalog; the HF cache (config.json + the snapshot's safetensors
headers, or a GGUF file); the answer cache (config and headers fetched from the Hub before: works offline);
the Hub (config.json into the HF cache, safetensors headers by ranged reads, or a GGUF header). When the
checkpoint's headers are known, its tensors price the weights exactly (``model_facts(checkpoint=...)``).

Paths (a config.json, a model folder, a .gguf file) are read locally. ``owner/name:Q4_K_M`` and
``owner/name/file.gguf`` pick a GGUF file of a repo.
"""

from __future__ import annotations

import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from vramdesk.core.architecture import ConfigError
from vramdesk.core.checkpoint import CheckpointError, stored_parameter_count, tensors_from_safetensors
from vramdesk.core.facts import ModelFacts, model_facts
from vramdesk.core.gguf_header import GgufHeader, tensors_from_gguf
from vramdesk.core.gpu import GpuSpec
from vramdesk.core.messages import Message, free, join
from vramdesk.error_words import redact_text, said

from .cache import AnswerCache, find_cached, hf_cache_dir
from .catalog import Catalog, CatalogError, default_catalog
from .hub import OFFLINE_WORDS, HubClient, HubError, display_endpoint, is_repo_id, pick_gguf
from .local import (
    LocalModelError,
    looks_like_path,
    read_config,
    read_folder_headers,
    read_gguf_model,
    read_model_folder,
)

_HUB_FILE = re.compile(r"^(?P<repo>[^/\s:]+/[^/\s:]+)/(?P<file>[^\s:]+\.gguf)$")
_HUB_QUANT = re.compile(r"^(?P<repo>[^/\s:]+/[^/\s:]+):(?P<quant>[A-Za-z0-9_.-]+)$")

Entries = dict[str, tuple[str, tuple[int, ...]]]

TIED_COPY = Message(
    "resolve.tied_copy",
    "tie_word_embeddings is true, yet the checkpoint also stores lm_head.weight ({params:,} parameters); "
    "transformers ties them on load, so memory counts it once",
)
STORED_DIFFERS = Message(
    "resolve.stored_differs",
    "the checkpoint stores {stored:,} parameters where the config's tensor inventory counts {inventory:,}: "
    "weights are priced from the stored tensors",
)
PRICED = Message("resolve.priced", "weights priced from {source}: {tensors:,} tensors")
PRICED_TYPES = Message("resolve.priced.types", "weights priced from {source}: {tensors:,} tensors ({types})")
GGUF_CONFIG = Message("resolve.gguf_config", "config derived from the GGUF metadata (llama.cpp keys)")
#: where the weights were priced from
GGUF_IN_CACHE = Message("resolve.source.gguf_cache", "GGUF header of {name} in the HF cache")
GGUF_ON_HUB = Message("resolve.source.gguf_hub", "GGUF header of {repo}/{name} on the Hub")
HEADERS_IN_CACHE = Message("resolve.source.cache", "safetensors headers in the HF cache ({files} file)")
HEADERS_IN_CACHE_N = Message("resolve.source.cache.files", "safetensors headers in the HF cache ({files} files)")
HEADERS_ON_HUB = Message("resolve.source.hub", "safetensors headers of {repo} on the Hub ({files} file)")
HEADERS_ON_HUB_N = Message("resolve.source.hub.files", "safetensors headers of {repo} on the Hub ({files} files)")
HEADERS_SAVED = Message("resolve.source.saved", "safetensors headers of {repo} saved from the Hub")
HEADERS_SAVED_ON = Message("resolve.source.saved_on", "safetensors headers of {repo} saved from the Hub on {date}")
CONFIG_SAVED_ON = Message("resolve.config_saved_on", "config.json saved from the Hub on {date}")
#: why the weights are estimated from config.json
SNAPSHOT_INCOMPLETE = Message("resolve.snapshot_incomplete", "HF cache snapshot incomplete ({error})")
OFFLINE_HEADERS = Message(
    "resolve.offline_headers", "safetensors headers not known offline: weights estimated from config.json"
)
ESTIMATED = Message("resolve.estimated", "{error}: weights estimated from config.json")
#: the places tried, and what each said
NOT_IN_CACHE = Message("resolve.not_in_cache", "not in the HF cache ({folder})")
NO_GGUF_IN_CACHE = Message("resolve.no_gguf_in_cache", "the HF cache has {repo} but no matching GGUF file")
NO_CONFIG = Message("resolve.no_config", "{repo} has no config.json (and no GGUF file: {error})")
NO_GGUF_MATCHING = Message(
    "resolve.no_gguf.matching", "{repo} has no GGUF file matching '{quant}' (GGUF files: {found})"
)
NO_GGUF = Message("resolve.no_gguf", "{repo} has no GGUF file (GGUF files: {found})")
NO_GGUF_FILES = Message("resolve.no_gguf.none", "none")
FILE_FAILED = Message("resolve.file_failed", "{path}: {problem}")
GIVE_REF = Message("resolve.give_ref", "give a Hub repo id (owner/name), a config.json, a model folder or a .gguf file")
OFFLINE = Message(
    "resolve.offline",
    "the Hub was not asked: offline mode (HF_HUB_OFFLINE is set; unset it to look models up on the Hub)",
)
HUB_SAID = Message("resolve.hub", "Hub: {error}")


class ResolveError(LookupError):
    """A model or GPU that cannot be found or read; the message says what and why (a
    :class:`~vramdesk.core.messages.Text`, ``args[0]``)."""

    def __init__(self, message: str) -> None:
        super().__init__(free(redact_text(message)))  # a Hub URL with a password or token never shows


# ----------------------------------------------------------------------------------------------
# facts from config + checkpoint


def facts_from_safetensors(
    config: dict[str, Any], model_id: str, entries: Entries | None, source: str, notes: tuple[str, ...] = ()
) -> ModelFacts:
    """ModelFacts whose weights are the checkpoint's own tensors (when ``entries`` are given; an unknown model
    type's architecture and inventory are then read from their names)."""
    facts = model_facts(config, model_id, notes=notes, headers=entries)
    if not entries:
        return facts
    arch = facts.arch
    tensors = tensors_from_safetensors(entries, arch)
    stored = stored_parameter_count(entries, arch.quantization_config)
    extra = list(notes)
    copy = sum(t.numel for t in tensors if t.part == "lm_head_copy")
    if copy:
        extra.append(TIED_COPY(params=copy))
    inventory = facts.counts.checkpoint
    if abs(stored - copy - inventory) > max(1, inventory // 1000):
        extra.append(STORED_DIFFERS(stored=stored, inventory=inventory))
    extra.append(PRICED(source=source, tensors=len(tensors)))
    return replace(
        facts, notes=tuple(extra), stored_total=stored, checkpoint=tensors, checkpoint_source=source, _cache={}
    )


def facts_from_gguf(config: dict[str, Any], model_id: str, header: GgufHeader, source: str) -> ModelFacts:
    facts = model_facts(config, model_id)
    tensors = tensors_from_gguf(header.entries(), facts.arch)
    types = sorted({t.stored_dtype or "?" for t in tensors if t.part == "text"})
    notes = (PRICED_TYPES(source=source, tensors=len(tensors), types=", ".join(types)), GGUF_CONFIG())
    return replace(
        facts,
        notes=notes,
        stored_total=sum(t.numel for t in tensors),
        checkpoint=tensors,
        checkpoint_source=source,
        _cache={},
    )


def _entries_to_json(entries: Entries) -> dict[str, list[Any]]:
    return {k: [d, list(s)] for k, (d, s) in entries.items()}


def _entries_from_json(data: Any) -> Entries | None:
    if not isinstance(data, dict):
        return None
    try:
        return {str(k): (str(v[0]), tuple(int(x) for x in v[1])) for k, v in data.items()}
    except (TypeError, ValueError, IndexError):
        return None


# ----------------------------------------------------------------------------------------------
# sources


def _local(ref: str) -> ModelFacts:
    path = Path(ref).expanduser()
    try:
        if path.suffix.lower() == ".gguf":
            m = read_gguf_model(path)
            assert m.gguf is not None
            return facts_from_gguf(m.config, str(path), m.gguf, m.source)
        if path.is_dir():
            folder = read_model_folder(path)
            return facts_from_safetensors(folder.config, str(path), folder.safetensors, folder.source, folder.notes)
        return model_facts(read_config(path), str(path))
    except LocalModelError as err:
        raise ResolveError(said(err)) from err
    except (ConfigError, CheckpointError) as err:
        raise ResolveError(FILE_FAILED(path=str(path), problem=said(err))) from err


class _Resolver:
    def __init__(self, client: HubClient | None, cache_dir: Path | None, answers: AnswerCache | None) -> None:
        self.client = client or HubClient()
        self.cache_dir = cache_dir
        self.answers = answers if answers is not None else AnswerCache()
        self.tried: list[str] = []  # (Texts)

    # ---- HF cache
    def from_hf_cache(self, repo: str, quant: str | None, file: str | None) -> ModelFacts | None:
        cached = find_cached(repo, self.cache_dir)
        if cached is None:
            self.tried.append(NOT_IN_CACHE(folder=str(self.cache_dir or hf_cache_dir())))
            return None
        snap = cached.snapshot
        want_gguf = bool(file or quant) or (not cached.has_config and cached.gguf)
        if want_gguf:
            name = file if file and (snap / file).is_file() else pick_gguf(cached.gguf, quant)
            if name is None:
                self.tried.append(NO_GGUF_IN_CACHE(repo=repo))
                return None
            m = read_gguf_model(snap / name)
            assert m.gguf is not None
            return facts_from_gguf(m.config, repo, m.gguf, GGUF_IN_CACHE(name=name))
        config = read_config(snap)
        entries: Entries | None = None
        source = ""
        notes: list[str] = []
        if cached.safetensors:
            try:
                entries, files = read_folder_headers(snap)
                source = (HEADERS_IN_CACHE_N if len(files) != 1 else HEADERS_IN_CACHE)(files=len(files))
            except LocalModelError as err:
                notes.append(SNAPSHOT_INCOMPLETE(error=said(err)))
                entries = None
        if entries is None:
            entries, source = self._saved_or_hub_headers(repo, notes)
        return facts_from_safetensors(config, repo, entries, source, tuple(notes))

    def _saved_or_hub_headers(self, repo: str, notes: list[str]) -> tuple[Entries | None, str]:
        record = self.answers.load_model(repo)
        saved = _entries_from_json(record.get("safetensors")) if record else None
        if saved:
            return saved, HEADERS_SAVED(repo=repo)
        if self.client.offline:
            notes.append(OFFLINE_HEADERS())
            return None, ""
        try:
            entries, n = self.client.safetensors_entries(repo)
        except HubError as err:
            notes.append(ESTIMATED(error=err.message))
            return None, ""
        self.answers.save_model(repo, display_endpoint(self.client.endpoint), safetensors=_entries_to_json(entries))
        return entries, (HEADERS_ON_HUB_N if n != 1 else HEADERS_ON_HUB)(repo=repo, files=n)

    # ---- saved answers
    def from_answers(self, repo: str) -> ModelFacts | None:
        record = self.answers.load_model(repo)
        if not record or not isinstance(record.get("config"), dict):
            return None
        when = time.strftime("%Y-%m-%d", time.localtime(float(record.get("saved_at", 0))))
        entries = _entries_from_json(record.get("safetensors"))
        source = HEADERS_SAVED_ON(repo=repo, date=when)
        note = CONFIG_SAVED_ON(date=when)
        return facts_from_safetensors(record["config"], repo, entries, source, (note,))

    # ---- the Hub
    def from_hub(self, repo: str, quant: str | None, file: str | None) -> ModelFacts:
        c = self.client
        if file or quant:
            return self._hub_gguf(repo, quant, file)
        try:
            config = c.config(repo)
        except HubError as err:
            if err.kind == "not_found" and "config.json is not in" in err.message:
                try:
                    return self._hub_gguf(repo, None, None)
                except HubError as gguf_err:
                    raise HubError("not_found", NO_CONFIG(repo=repo, error=gguf_err.message), repo=repo) from err
            raise
        notes: list[str] = []
        entries: Entries | None = None
        source = ""
        try:
            entries, n = c.safetensors_entries(repo)
            source = (HEADERS_ON_HUB_N if n != 1 else HEADERS_ON_HUB)(repo=repo, files=n)
        except HubError as err:
            notes.append(ESTIMATED(error=err.message))
        facts = facts_from_safetensors(config, repo, entries, source, tuple(notes))
        self.answers.save_model(
            repo,
            display_endpoint(c.endpoint),
            summary={"model_type": facts.arch.model_type, "params": facts.stored_total or facts.counts.checkpoint},
            config=config,
            safetensors=_entries_to_json(entries) if entries else None,
        )
        return facts

    def _hub_gguf(self, repo: str, quant: str | None, file: str | None) -> ModelFacts:
        c = self.client
        name = file
        if name is None:
            info = c.model_info(repo)
            name = pick_gguf(info.files, quant)
            if name is None:
                found = ", ".join(info.gguf_files[:6]) or NO_GGUF_FILES()
                missing = (
                    NO_GGUF_MATCHING(repo=repo, quant=quant, found=found) if quant else NO_GGUF(repo=repo, found=found)
                )
                raise HubError("not_found", missing, repo=repo)
        header, _size = c.gguf_header(repo, name)
        from vramdesk.core.gguf_header import gguf_to_config

        try:
            config = gguf_to_config(header)
        except CheckpointError as err:
            raise HubError("malformed", FILE_FAILED(path=f"{repo}/{name}", problem=said(err)), repo=repo) from err
        facts = facts_from_gguf(config, f"{repo}/{name}", header, GGUF_ON_HUB(repo=repo, name=name))
        self.answers.save_model(
            f"{repo}/{name}",
            display_endpoint(c.endpoint),
            summary={"model_type": facts.arch.model_type, "params": facts.stored_total, "kind": "gguf"},
            config=config,
        )
        return facts


def split_ref(ref: str) -> tuple[str, str | None, str | None] | None:
    """``owner/name`` | ``owner/name:QUANT`` | ``owner/name/file.gguf`` -> (repo, quant, file), else None."""
    m = _HUB_FILE.match(ref)
    if m and is_repo_id(m.group("repo")):
        return m.group("repo"), None, m.group("file")
    m = _HUB_QUANT.match(ref)
    if m and is_repo_id(m.group("repo")):
        return m.group("repo"), m.group("quant"), None
    if is_repo_id(ref):
        return ref, None, None
    return None


def resolve_model(
    ref: str,
    catalog: Catalog | None = None,
    *,
    client: HubClient | None = None,
    cache_dir: Path | None = None,
    answers: AnswerCache | None = None,
) -> ModelFacts:
    """A catalog id, repo id (HF cache, saved answers, Hub), config.json, model folder or .gguf -> ModelFacts.

    Raises :class:`ResolveError` with one line that names the reference and every place that was tried.
    """
    cat = catalog or default_catalog()
    ref = ref.strip()
    if cat.find(ref) is not None:
        return cat.facts(ref)
    hub_ref = None if Path(ref).expanduser().exists() else split_ref(ref)
    if hub_ref is None and looks_like_path(ref):
        return _local(ref)
    try:
        cat.get(ref)
        raise AssertionError("unreachable: find() returned None")  # pragma: no cover
    except CatalogError as err:
        catalog_msg = said(err)
    if hub_ref is None:
        raise ResolveError(join("; ", catalog_msg, GIVE_REF()))
    repo, quant, file = hub_ref
    r = _Resolver(client, cache_dir, answers)
    try:
        facts = r.from_hf_cache(repo, quant, file)
        if facts is not None:
            r.answers.touch_recent(facts.model_id, "cache")
            return facts
        if not (file or quant):
            facts = r.from_answers(repo)
            if facts is not None:
                r.answers.touch_recent(repo, "cache")
                return facts
        facts = r.from_hub(repo, quant, file)
        r.answers.touch_recent(facts.model_id, "hub")
        return facts
    except HubError as err:
        raise ResolveError(join("; ", catalog_msg, *r.tried, _hub_words(err))) from err
    except LocalModelError as err:
        raise ResolveError(said(err)) from err
    except (ConfigError, CheckpointError) as err:
        raise ResolveError(FILE_FAILED(path=ref, problem=said(err))) from err


def _hub_words(err: HubError) -> str:
    if err.kind == "offline" and OFFLINE_WORDS in err.message:
        return OFFLINE()
    return HUB_SAID(error=err.message)


def resolve_gpu(name: str | None, catalog: Catalog | None = None) -> GpuSpec | None:
    if not name:
        return None
    cat = catalog or default_catalog()
    try:
        return cat.gpu(name)
    except CatalogError as err:
        raise ResolveError(said(err)) from err


__all__ = ["ResolveError", "facts_from_gguf", "facts_from_safetensors", "resolve_gpu", "resolve_model", "split_ref"]
