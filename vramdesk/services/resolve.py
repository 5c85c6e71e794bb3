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
from vramdesk.safety import redact

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


class ResolveError(LookupError):
    """A model or GPU that cannot be found or read; the message says what and why."""

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))  # a Hub URL with a password or token never shows


# ----------------------------------------------------------------------------------------------
# facts from config + checkpoint


def facts_from_safetensors(
    config: dict[str, Any], model_id: str, entries: Entries | None, source: str, notes: tuple[str, ...] = ()
) -> ModelFacts:
    """ModelFacts whose weights are the checkpoint's own tensors (when ``entries`` are given)."""
    facts = model_facts(config, model_id, notes=notes)
    if not entries:
        return facts
    arch = facts.arch
    tensors = tensors_from_safetensors(entries, arch)
    stored = stored_parameter_count(entries, arch.quantization_config)
    extra = list(notes)
    copy = sum(t.numel for t in tensors if t.part == "lm_head_copy")
    if copy:
        extra.append(
            f"tie_word_embeddings is true, yet the checkpoint also stores lm_head.weight ({copy:,} parameters); "
            "transformers ties them on load, so memory counts it once"
        )
    inventory = facts.counts.checkpoint
    if abs(stored - copy - inventory) > max(1, inventory // 1000):
        extra.append(
            f"the checkpoint stores {stored:,} parameters where the config's tensor inventory counts {inventory:,}: "
            "weights are priced from the stored tensors"
        )
    extra.append(f"weights priced from {source}: {len(tensors):,} tensors")
    return replace(
        facts, notes=tuple(extra), stored_total=stored, checkpoint=tensors, checkpoint_source=source, _cache={}
    )


def facts_from_gguf(config: dict[str, Any], model_id: str, header: GgufHeader, source: str) -> ModelFacts:
    facts = model_facts(config, model_id)
    tensors = tensors_from_gguf(header.entries(), facts.arch)
    types = sorted({t.stored_dtype or "?" for t in tensors if t.part == "text"})
    notes = (
        f"weights priced from {source}: {len(tensors):,} tensors ({', '.join(types)})",
        "config derived from the GGUF metadata (llama.cpp keys)",
    )
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
        raise ResolveError(str(err)) from err
    except (ConfigError, CheckpointError) as err:
        raise ResolveError(f"{path}: {err}") from err


class _Resolver:
    def __init__(self, client: HubClient | None, cache_dir: Path | None, answers: AnswerCache | None) -> None:
        self.client = client or HubClient()
        self.cache_dir = cache_dir
        self.answers = answers if answers is not None else AnswerCache()
        self.tried: list[str] = []

    # ---- HF cache
    def from_hf_cache(self, repo: str, quant: str | None, file: str | None) -> ModelFacts | None:
        cached = find_cached(repo, self.cache_dir)
        if cached is None:
            self.tried.append(f"not in the HF cache ({self.cache_dir or hf_cache_dir()})")
            return None
        snap = cached.snapshot
        want_gguf = bool(file or quant) or (not cached.has_config and cached.gguf)
        if want_gguf:
            name = file if file and (snap / file).is_file() else pick_gguf(cached.gguf, quant)
            if name is None:
                self.tried.append(f"the HF cache has {repo} but no matching GGUF file")
                return None
            m = read_gguf_model(snap / name)
            assert m.gguf is not None
            return facts_from_gguf(m.config, repo, m.gguf, f"GGUF header of {name} in the HF cache")
        config = read_config(snap)
        entries: Entries | None = None
        source = ""
        notes: list[str] = []
        if cached.safetensors:
            try:
                entries, files = read_folder_headers(snap)
                source = f"safetensors headers in the HF cache ({len(files)} file{'s' if len(files) != 1 else ''})"
            except LocalModelError as err:
                notes.append(f"HF cache snapshot incomplete ({err})")
                entries = None
        if entries is None:
            entries, source = self._saved_or_hub_headers(repo, notes)
        return facts_from_safetensors(config, repo, entries, source, tuple(notes))

    def _saved_or_hub_headers(self, repo: str, notes: list[str]) -> tuple[Entries | None, str]:
        record = self.answers.load_model(repo)
        saved = _entries_from_json(record.get("safetensors")) if record else None
        if saved:
            return saved, f"safetensors headers of {repo} saved from the Hub"
        if self.client.offline:
            notes.append("safetensors headers not known offline: weights estimated from config.json")
            return None, ""
        try:
            entries, n = self.client.safetensors_entries(repo)
        except HubError as err:
            notes.append(f"{err.message}: weights estimated from config.json")
            return None, ""
        self.answers.save_model(repo, display_endpoint(self.client.endpoint), safetensors=_entries_to_json(entries))
        return entries, f"safetensors headers of {repo} on the Hub ({n} file{'s' if n != 1 else ''})"

    # ---- saved answers
    def from_answers(self, repo: str) -> ModelFacts | None:
        record = self.answers.load_model(repo)
        if not record or not isinstance(record.get("config"), dict):
            return None
        when = time.strftime("%Y-%m-%d", time.localtime(float(record.get("saved_at", 0))))
        entries = _entries_from_json(record.get("safetensors"))
        source = f"safetensors headers of {repo} saved from the Hub on {when}"
        note = f"config.json saved from the Hub on {when}"
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
                    raise HubError(
                        "not_found", f"{repo} has no config.json (and no GGUF file: {gguf_err.message})", repo=repo
                    ) from err
            raise
        notes: list[str] = []
        entries: Entries | None = None
        source = ""
        try:
            entries, n = c.safetensors_entries(repo)
            source = f"safetensors headers of {repo} on the Hub ({n} file{'s' if n != 1 else ''})"
        except HubError as err:
            notes.append(f"{err.message}: weights estimated from config.json")
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
                what = f"GGUF file matching '{quant}'" if quant else "GGUF file"
                found = ", ".join(info.gguf_files[:6]) or "none"
                raise HubError("not_found", f"{repo} has no {what} (GGUF files: {found})", repo=repo)
        header, _size = c.gguf_header(repo, name)
        from vramdesk.core.gguf_header import gguf_to_config

        try:
            config = gguf_to_config(header)
        except CheckpointError as err:
            raise HubError("malformed", f"{repo}/{name}: {err}", repo=repo) from err
        facts = facts_from_gguf(config, f"{repo}/{name}", header, f"GGUF header of {repo}/{name} on the Hub")
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
        catalog_msg = str(err)
    if hub_ref is None:
        raise ResolveError(
            f"{catalog_msg}; give a Hub repo id (owner/name), a config.json, a model folder or a .gguf file"
        )
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
        tried = "; ".join(r.tried)
        raise ResolveError(f"{catalog_msg}; {tried + '; ' if tried else ''}{_hub_words(err)}") from err
    except LocalModelError as err:
        raise ResolveError(str(err)) from err
    except (ConfigError, CheckpointError) as err:
        raise ResolveError(f"{ref}: {err}") from err


def _hub_words(err: HubError) -> str:
    if err.kind == "offline" and OFFLINE_WORDS in err.message:
        return "the Hub was not asked: offline mode (HF_HUB_OFFLINE is set; unset it to look models up on the Hub)"
    return f"Hub: {err.message}"


def resolve_gpu(name: str | None, catalog: Catalog | None = None) -> GpuSpec | None:
    if not name:
        return None
    cat = catalog or default_catalog()
    try:
        return cat.gpu(name)
    except CatalogError as err:
        raise ResolveError(str(err)) from err


__all__ = ["ResolveError", "facts_from_gguf", "facts_from_safetensors", "resolve_gpu", "resolve_model", "split_ref"]
