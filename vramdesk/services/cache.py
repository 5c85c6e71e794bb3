"""What is already on this machine: the Hugging Face cache, and vramdesk's own cache of Hub answers.

* The HF cache (``$HF_HUB_CACHE``, default ``~/.cache/huggingface/hub``): :func:`find_cached` looks one repo
  up by its path (no scan), :func:`cached_models` lists the repos whose snapshot holds a ``config.json`` or a
  ``.gguf`` file (a directory walk of a few syscalls per repo, memoised until the folder changes: fast
  enough to run on every keystroke), :func:`scan_hf_cache` is ``huggingface_hub.scan_cache_dir`` with sizes.
* The answer cache (``platformdirs.user_cache_dir("vramdesk")/hub``, or ``$VRAMDESK_CACHE_DIR``): Hub search
  answers, model configs and safetensors headers looked at before, and the recently used models, as JSON
  files written atomically. It is what keeps search and estimates working offline. It never holds a token.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vramdesk.core import jsonsafe
from vramdesk.fsutil import atomic_write_text

#: answer-cache files larger than this are ignored (DeepSeek-V3's headers are ~6 MB)
MAX_ANSWER_BYTES = 64 * 1024 * 1024
MAX_RECENT = 50
ANSWER_SCHEMA = 1


def hf_cache_dir() -> Path:
    """The HF hub cache folder as the environment says now (``HF_HUB_CACHE``, ``HF_HOME``, XDG, default)."""
    env = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if env:
        return Path(env).expanduser()
    home = os.environ.get("HF_HOME")
    if home:
        return Path(home).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "huggingface" / "hub"


def answer_cache_dir() -> Path:
    env = os.environ.get("VRAMDESK_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("vramdesk", appauthor=False))


# ----------------------------------------------------------------------------------------------
# the HF cache


@dataclass(frozen=True)
class CachedModel:
    id: str
    snapshot: Path
    has_config: bool
    safetensors: tuple[str, ...]
    gguf: tuple[str, ...]

    @property
    def kind(self) -> str:
        if self.safetensors:
            return "safetensors"
        if self.gguf:
            return "gguf"
        return "config"


def _repo_folder(repo: str) -> str:
    return "models--" + repo.replace("/", "--")


def _snapshot(folder: Path) -> Path | None:
    ref = folder / "refs" / "main"
    try:
        commit = ref.read_text(encoding="utf-8").strip()
        snap = folder / "snapshots" / commit
        if commit and snap.is_dir():
            return snap
    except OSError:
        pass
    try:
        snaps = [p for p in (folder / "snapshots").iterdir() if p.is_dir()]
    except OSError:
        return None
    return max(snaps, key=lambda p: p.stat().st_mtime) if snaps else None


def _cached(repo: str, folder: Path) -> CachedModel | None:
    snap = _snapshot(folder)
    if snap is None:
        return None
    try:
        names = [p.name for p in snap.iterdir()]
    except OSError:
        return None
    has_config = "config.json" in names
    st = tuple(sorted(n for n in names if n.endswith(".safetensors")))
    gg = tuple(sorted(n for n in names if n.endswith(".gguf") and "mmproj" not in n.lower()))
    if not has_config and not gg:
        return None
    return CachedModel(repo, snap, has_config, st, gg)


def find_cached(repo: str, cache_dir: Path | None = None) -> CachedModel | None:
    """The newest snapshot of ``repo`` in the HF cache when it holds a config.json or a GGUF file."""
    folder = (cache_dir or hf_cache_dir()) / _repo_folder(repo)
    if not folder.is_dir():
        return None
    return _cached(repo, folder)


_LIST_MEMO: dict[str, tuple[int, list[CachedModel]]] = {}


def cached_models(cache_dir: Path | None = None) -> list[CachedModel]:
    """Every model repo in the HF cache whose snapshot has a config.json or a .gguf file."""
    root = cache_dir or hf_cache_dir()
    try:
        stamp = root.stat().st_mtime_ns
    except OSError:
        return []
    key = str(root)
    hit = _LIST_MEMO.get(key)
    if hit is not None and hit[0] == stamp:
        return list(hit[1])
    out: list[CachedModel] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    for e in entries:
        if not e.name.startswith("models--") or not e.is_dir():
            continue
        repo = e.name.removeprefix("models--").replace("--", "/", 1)
        m = _cached(repo, Path(e.path))
        if m is not None:
            out.append(m)
    out.sort(key=lambda m: m.id.lower())
    _LIST_MEMO[key] = (stamp, out)
    return list(out)


@dataclass(frozen=True)
class CacheRepo:
    id: str
    size_on_disk: int
    nb_files: int
    last_accessed: float
    has_config: bool


def scan_hf_cache(cache_dir: Path | None = None) -> list[CacheRepo]:
    """``huggingface_hub.scan_cache_dir``: model repos with their size on disk (slower: it stats every file)."""
    from huggingface_hub import scan_cache_dir
    from huggingface_hub.errors import CacheNotFound

    try:
        info = scan_cache_dir(cache_dir or hf_cache_dir())
    except CacheNotFound:
        return []
    out = []
    for repo in info.repos:
        if repo.repo_type != "model":
            continue
        has_config = any(f.file_name == "config.json" for rev in repo.revisions for f in rev.files)
        out.append(CacheRepo(repo.repo_id, repo.size_on_disk, repo.nb_files, repo.last_accessed, has_config))
    return sorted(out, key=lambda r: r.id.lower())


# ----------------------------------------------------------------------------------------------
# the answer cache


def _safe_name(repo: str) -> str:
    return repo.replace("/", "--").replace("\\", "_").replace("..", "_")


class AnswerCache:
    """Hub answers kept for offline use: search results, model configs and headers, recently used models."""

    def __init__(self, root: Path | None = None) -> None:
        self._root = root

    @property
    def root(self) -> Path:
        return (self._root or answer_cache_dir()) / "hub"

    # ---- reading and writing, tolerant of damaged files
    def _read(self, path: Path) -> dict[str, Any] | None:
        try:
            if path.stat().st_size > MAX_ANSWER_BYTES:
                return None
            data = jsonsafe.loads(path.read_bytes(), source=str(path))
        except (OSError, jsonsafe.JsonError):  # a damaged answer is no answer (NaN and deep nesting included)
            return None
        return data if isinstance(data, dict) and data.get("schema") == ANSWER_SCHEMA else None

    def _write(self, path: Path, data: dict[str, Any]) -> None:
        data = {"schema": ANSWER_SCHEMA, "saved_at": time.time(), **data}
        with contextlib.suppress(OSError):  # a read-only or full disk must not break an estimate
            atomic_write_text(path, json.dumps(data, separators=(",", ":")))

    # ---- search answers
    def _search_path(self, endpoint: str, query: str) -> Path:
        key = hashlib.sha256(f"{endpoint}\n{query.strip().lower()}".encode()).hexdigest()[:24]
        return self.root / "search" / f"{key}.json"

    def save_search(self, endpoint: str, query: str, models: list[dict[str, Any]]) -> None:
        self._write(self._search_path(endpoint, query), {"endpoint": endpoint, "query": query, "models": models})

    def load_search(self, endpoint: str, query: str) -> tuple[float, list[dict[str, Any]]] | None:
        data = self._read(self._search_path(endpoint, query))
        if data is None or not isinstance(data.get("models"), list):
            return None
        return float(data.get("saved_at", 0)), [m for m in data["models"] if isinstance(m, dict)]

    # ---- one model: config, headers, Hub details
    def _model_path(self, repo: str) -> Path:
        return self.root / "models" / f"{_safe_name(repo)}.model.json"

    def save_model(self, repo: str, endpoint: str, summary: dict[str, Any] | None = None, **parts: Any) -> None:
        """Merge ``parts`` (config=..., safetensors={name: [dtype, shape]}, info=...) into the repo's record;
        ``summary`` (model_type, params, kind, ...) goes into the small index offline search reads."""
        old = self.load_model(repo) or {}
        old.pop("schema", None)
        old.pop("saved_at", None)
        old.update({k: v for k, v in parts.items() if v is not None})
        old.update({"repo": repo, "endpoint": endpoint})
        self._write(self._model_path(repo), old)
        index_path = self.root / "models" / "index.json"
        index = self._read(index_path) or {}
        entries: dict[str, Any] = index["models"] if isinstance(index.get("models"), dict) else {}
        entry = dict(entries.get(repo) or {})
        entry.update(summary or {})
        entry["saved_at"] = time.time()
        entries[repo] = entry
        self._write(index_path, {"models": entries})

    def load_model(self, repo: str) -> dict[str, Any] | None:
        data = self._read(self._model_path(repo))
        if data is None or data.get("repo") != repo:
            return None
        return data

    def known_models(self) -> dict[str, dict[str, Any]]:
        """{repo id: summary} of every model looked at before (for offline search; one small file)."""
        index = self._read(self.root / "models" / "index.json") or {}
        models = index.get("models")
        return {k: v for k, v in models.items() if isinstance(v, dict)} if isinstance(models, dict) else {}

    # ---- recently used
    def touch_recent(self, model_id: str, source: str) -> None:
        path = self.root / "recent.json"
        data = self._read(path) or {}
        items = [r for r in data.get("items", []) if isinstance(r, dict) and r.get("id") != model_id]
        items.insert(0, {"id": model_id, "source": source, "at": time.time()})
        self._write(path, {"items": items[:MAX_RECENT]})

    def recent(self) -> list[dict[str, Any]]:
        data = self._read(self.root / "recent.json") or {}
        return [r for r in data.get("items", []) if isinstance(r, dict) and isinstance(r.get("id"), str)]
