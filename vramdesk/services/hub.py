"""The Hugging Face Hub through ``huggingface_hub``: search, model details, config.json, checkpoint headers.

Every call

* has a deadline: it runs in a daemon worker thread and the caller gets an answer (or a ``timeout``
  :class:`HubError`) within ``timeout`` seconds, whatever the library does underneath (``list_models`` has no
  timeout of its own, and ``hf_hub_download`` retries a failing server for ~23 s); a caller can also pass a
  ``threading.Event`` to abandon it early (``cancelled``);
* maps failures to a :class:`HubError` whose ``kind`` is one of :data:`ERROR_KINDS` and whose message says
  what to do;
* reads ``HF_ENDPOINT`` and ``HF_HUB_OFFLINE`` when it runs, not at import (``huggingface_hub`` reads them
  once at import; the endpoint is passed explicitly), so mirrors and offline mode follow the environment;
* uses the user's token: the one given, else the one ``huggingface_hub`` stores (``HF_TOKEN`` or
  ``hf auth login``). The token is only ever passed to ``huggingface_hub``; it is never logged, printed or
  written anywhere by vramdesk.

Search requests go straight to ``/api/models`` (the request ``list_models`` makes, with the same headers and
session), because ``list_models`` retries dead servers for 23 s and accepts no timeout. ``huggingface_hub``
itself is imported lazily: the command line pays its 0.2 s import only when the Hub is really asked.
"""

from __future__ import annotations

import os
import queue
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from vramdesk import __version__
from vramdesk.core import jsonsafe
from vramdesk.core.checkpoint import CheckpointError
from vramdesk.core.gguf_header import GgufHeader
from vramdesk.core.messages import Message, free
from vramdesk.error_words import redact_text, said
from vramdesk.safety import redact

from .local import GGUF_FIRST_READ, MAX_GGUF_HEADER, LocalModelError, parse_growing, read_config

T = TypeVar("T")

DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_TIMEOUT = 10.0
ERROR_KINDS = ("not_found", "gated", "rate_limited", "server", "timeout", "offline", "malformed", "cancelled")
#: what search asks the Hub to include for each model
SEARCH_EXPAND = ("safetensors", "config", "gguf", "downloads", "likes", "gated", "pipeline_tag", "lastModified")
INFO_EXPAND = (*SEARCH_EXPAND, "siblings", "sha", "usedStorage", "library_name", "tags")
#: model kinds search asks for (one request each, merged by downloads)
SEARCH_PIPELINES = ("text-generation", "image-text-to-text")
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
_TRUE = {"1", "ON", "YES", "TRUE"}

#: what a call was doing (the start of its error message)
SEARCHING = Message("hub.what.search", "searching '{query}' on the Hub")
LOOKING_UP = Message("hub.what.lookup", "looking up {repo} on the Hub")
DOWNLOADING = Message("hub.what.download", "downloading {filename} of {repo}")
READING_SAFETENSORS = Message("hub.what.safetensors", "reading safetensors headers of {repo}")
READING_GGUF = Message("hub.what.gguf", "reading the GGUF header of {repo}/{filename}")
CONFIG_OF = Message("hub.what.config", "config.json of {repo}")
#: "what it was doing: what went wrong"
FAILED = Message("hub.failed", "{what}: {problem}")
FAILED_OTHER = Message("hub.failed.other", "{what}: {kind}: {error}")
OFFLINE = Message("hub.offline", "not asked: offline mode (HF_HUB_OFFLINE is set)")
OFFLINE_WORDS = OFFLINE.template
CANCELLED = Message("hub.cancelled", "cancelled")
NO_ANSWER = Message("hub.no_answer", "no answer from the Hub within {seconds:g} s")
TOKEN_NO_ACCESS = Message("hub.hint.no_access", "your token has no access to it: request access on the model's page")
TOKEN_SET = Message(
    "hub.hint.set_token",
    "set a Hugging Face token (HF_TOKEN, `hf auth login`, or the token field in the app's settings)",
)
GATED = Message("hub.gated", "{repo} is gated on {where}: {hint}")
GATED_THIS = Message("hub.gated.this_repo", "this repo is gated on {where}: {hint}")
NO_MODEL = Message("hub.no_model", "no model '{repo}' on {where}")
NO_MODEL_PRIVATE = Message(
    "hub.no_model.private", "no model '{repo}' on {where} (or it is private or gated: set a token to see it)"
)
NO_REVISION = Message("hub.no_revision", "revision not found in {repo} on {where}")
FILE_NOT_IN = Message("hub.file_not_in", "{name} is not in {repo} on {where}")
THE_FILE_NOT_IN = Message("hub.file_not_in.unnamed", "the file is not in {repo} on {where}")
NO_SAFETENSORS = Message("hub.no_safetensors", "{repo} has no safetensors weights")
RATE_LIMITED = Message("hub.rate_limited", "rate limited by {where} (HTTP 429); wait a minute")
RATE_LIMITED_TOKEN = Message(
    "hub.rate_limited.token", "rate limited by {where} (HTTP 429); wait a minute, or set a token for a higher limit"
)
REFUSED = Message("hub.refused", "{where} refused access (HTTP {status}): {hint}")
NOT_FOUND_HTTP = Message("hub.not_found", "not found on {where} (HTTP 404)")
SERVER = Message("hub.server", "{where} answered HTTP {status}; try again later")
TIMEOUT = Message("hub.timeout", "{where} did not answer in time")
UNREACHABLE = Message("hub.unreachable", "cannot reach {where} ({kind}: {error}); check the network")
UNEXPECTED = Message("hub.unexpected", "unexpected answer from {where} ({kind}: {error})")
NOT_A_REPO = Message("hub.not_a_repo", "'{repo}' is not a Hub repo id (owner/name)")
LIST_NOT_JSON = Message("hub.list_not_json", "the Hub's model list is not valid JSON ({problem})")
NOT_A_LIST = Message("hub.not_a_list", "the Hub answered {kind} where a list of models was expected")
ENTRY_WITHOUT_ID = Message("hub.entry_without_id", "the Hub answered a model entry without an 'id'")
RANGE_IGNORED = Message("hub.range_ignored", "{filename}: the server ignored the byte range (HTTP {status})")
BAD_RANGE = Message("hub.bad_range", "{filename}: bad Content-Range {value!r}")
FILE_FAILED = Message("hub.file_failed", "{repo}/{filename}: {problem}")
DATA_PAST_END = Message(
    "hub.data_past_end", "{repo}/{filename}: tensor data should end at byte {end:,} but the file has {total:,}"
)
HEADER_TOO_LARGE = Message("hub.header_too_large", "{repo}/{filename}: header too large")


class HubError(Exception):
    """A Hub call that failed; ``kind`` is one of :data:`ERROR_KINDS`, the message is one line for people (a
    :class:`~vramdesk.core.messages.Text` with its message id, also ``args[0]``)."""

    def __init__(self, kind: str, message: str, *, repo: str | None = None) -> None:
        assert kind in ERROR_KINDS, kind
        # where library / network errors become ours: no password, token or signed URL goes further
        message = free(redact_text(message))
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.repo = repo

    def __str__(self) -> str:
        return self.message


def is_repo_id(ref: str) -> bool:
    return bool(_REPO_ID.match(ref)) and ".." not in ref and not ref.endswith((".json", ".gguf"))


def hub_endpoint(explicit: str | None = None) -> str:
    """The Hub's address: ``explicit``, else ``HF_ENDPOINT`` as set now, else huggingface.co."""
    return (explicit or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def offline_from_env() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in _TRUE


@dataclass(frozen=True)
class HubModel:
    """One model as the Hub describes it (search hit or model details)."""

    id: str
    downloads: int | None = None
    likes: int | None = None
    #: False, "auto" or "manual"
    gated: bool | str = False
    pipeline_tag: str | None = None
    last_modified: str | None = None
    #: safetensors parameter count per dtype and total, when the Hub knows it
    params_by_dtype: dict[str, int] = field(default_factory=dict)
    params_total: int | None = None
    #: the Hub's subset of config.json (model_type, architectures, quantization_config, ...)
    config: dict[str, Any] | None = None
    #: GGUF summary (total, architecture, context_length) for GGUF repos
    gguf: dict[str, Any] | None = None
    #: file names in the repo (model details only)
    files: tuple[str, ...] = ()
    #: file sizes when the Hub listed them
    sizes: dict[str, int] = field(default_factory=dict)
    sha: str | None = None

    @property
    def model_type(self) -> str | None:
        mt = (self.config or {}).get("model_type")
        return mt if isinstance(mt, str) else None

    @property
    def gguf_files(self) -> tuple[str, ...]:
        return tuple(f for f in self.files if f.endswith(".gguf") and "mmproj" not in f.lower())

    def to_json(self) -> dict[str, Any]:
        """The Hub API's own shape (what :meth:`from_api` reads back), for the offline answer cache."""
        out: dict[str, Any] = {
            "id": self.id,
            "downloads": self.downloads,
            "likes": self.likes,
            "gated": self.gated,
            "pipeline_tag": self.pipeline_tag,
            "lastModified": self.last_modified,
            "config": self.config,
            "gguf": self.gguf,
        }
        if self.params_by_dtype:
            out["safetensors"] = {"parameters": self.params_by_dtype, "total": self.params_total}
        return out

    @classmethod
    def from_api(cls, item: Any) -> HubModel:
        """A model object from /api/models (list or details); malformed answers raise :class:`HubError`."""
        if not isinstance(item, dict) or not isinstance(item.get("id") or item.get("modelId"), str):
            raise HubError("malformed", ENTRY_WITHOUT_ID())

        def num(v: Any) -> int | None:
            return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else None

        st = item.get("safetensors")
        by_dtype: dict[str, int] = {}
        total = None
        if isinstance(st, dict):
            params = st.get("parameters")
            if isinstance(params, dict):
                by_dtype = {str(k): int(v) for k, v in params.items() if isinstance(v, int | float)}
            total = num(st.get("total"))
        gguf = item.get("gguf") if isinstance(item.get("gguf"), dict) else None
        if total is None and gguf is not None:
            total = num(gguf.get("total"))
        files: list[str] = []
        sizes: dict[str, int] = {}
        for s in item.get("siblings") or []:
            if isinstance(s, dict) and isinstance(s.get("rfilename"), str):
                files.append(s["rfilename"])
                lfs: dict[str, Any] = s["lfs"] if isinstance(s.get("lfs"), dict) else {}
                size = num(s.get("size")) or num(lfs.get("size"))
                if size is not None:
                    sizes[s["rfilename"]] = size
        gated = item.get("gated", False)
        return cls(
            id=str(item.get("id") or item.get("modelId")),
            downloads=num(item.get("downloads")),
            likes=num(item.get("likes")),
            gated=gated if isinstance(gated, bool | str) else False,
            pipeline_tag=item.get("pipeline_tag") if isinstance(item.get("pipeline_tag"), str) else None,
            last_modified=item.get("lastModified") if isinstance(item.get("lastModified"), str) else None,
            params_by_dtype=by_dtype,
            params_total=total,
            config=item.get("config") if isinstance(item.get("config"), dict) else None,
            gguf=gguf,
            files=tuple(files),
            sizes=sizes,
            sha=item.get("sha") if isinstance(item.get("sha"), str) else None,
        )


# ----------------------------------------------------------------------------------------------
# deadline runner


def run_with_deadline(
    fn: Callable[[], T], timeout: float, what: str, cancel: threading.Event | None = None, repo: str | None = None
) -> T:
    """Run ``fn`` in a daemon thread; return its result, re-raise its error, or give up after ``timeout``
    seconds (``HubError('timeout')``) or as soon as ``cancel`` is set (``HubError('cancelled')``).

    An abandoned call goes on in the background until the library's own timeouts end it; its result is
    dropped. Daemon threads never hold up the interpreter's exit.
    """
    box: dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as err:  # handed to the caller
            box["error"] = err
        finally:
            done.set()

    threading.Thread(target=target, name=f"vramdesk-hub: {what}", daemon=True).start()
    if cancel is None:
        finished = done.wait(timeout)
    else:
        step, waited, finished = 0.05, 0.0, False
        while not finished and waited < timeout and not cancel.is_set():
            finished = done.wait(min(step, timeout - waited))
            waited += step
    if not finished:
        if cancel is not None and cancel.is_set():
            raise HubError("cancelled", FAILED(what=free(what), problem=CANCELLED()), repo=repo)
        raise HubError("timeout", FAILED(what=free(what), problem=NO_ANSWER(seconds=timeout)), repo=repo)
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value


def parallel_map(fn: Callable[[str], T], items: list[str], workers: int = 8) -> list[T]:
    """``[fn(x) for x in items]`` on up to ``workers`` daemon threads (an abandoned call must never hold up
    the interpreter's exit, which a ThreadPoolExecutor's non-daemon workers would); the first error wins."""
    todo: queue.SimpleQueue[str] = queue.SimpleQueue()
    for item in items:
        todo.put(item)
    results: dict[str, T] = {}
    errors: list[BaseException] = []

    def work() -> None:
        while not errors:
            try:
                item = todo.get_nowait()
            except queue.Empty:
                return
            try:
                results[item] = fn(item)
            except BaseException as err:
                errors.append(err)

    threads = [threading.Thread(target=work, daemon=True) for _ in range(max(1, min(workers, len(items))))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise errors[0]
    return [results[item] for item in items]


def display_endpoint(endpoint: str) -> str:
    """The endpoint as messages and saved answers show it: no scheme, no ``user:password@``, no query."""
    host = endpoint.split("://", 1)[-1].split("?", 1)[0].split("#", 1)[0]
    # the last "@": a password may hold "@" or "/"; "mirror/@org" (an "@" in the path) stays
    auth, at, rest = host.rpartition("@")
    if at and (":" in auth or "/" not in auth):
        host = rest
    return redact(host)


# ----------------------------------------------------------------------------------------------
# error mapping


def _chain(err: BaseException) -> Iterable[BaseException]:
    seen: set[int] = set()
    cur: BaseException | None = err
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def map_error(err: BaseException, what: str, *, repo: str | None, endpoint: str, has_token: bool) -> HubError:
    """A library / network exception -> :class:`HubError` with a message that says what to do."""
    if isinstance(err, HubError):
        return err
    found = _problem(err, repo=repo, where=display_endpoint(endpoint), has_token=has_token)
    if found is None:
        return HubError(
            "server", FAILED_OTHER(what=free(what), kind=type(err).__name__, error=free(str(err))), repo=repo
        )
    kind, problem = found
    return HubError(kind, FAILED(what=free(what), problem=problem), repo=repo)


def _problem(err: BaseException, *, repo: str | None, where: str, has_token: bool) -> tuple[str, str] | None:
    """The kind of a library / network failure and what went wrong, in words; None for an unknown one."""
    import httpx2
    from huggingface_hub import errors as hf

    hint = TOKEN_NO_ACCESS() if has_token else TOKEN_SET()
    for e in _chain(err):
        if isinstance(e, hf.OfflineModeIsEnabled):
            return "offline", OFFLINE()
        if isinstance(e, hf.GatedRepoError):
            return "gated", GATED(repo=repo, where=where, hint=hint) if repo else GATED_THIS(where=where, hint=hint)
        if isinstance(e, hf.RepositoryNotFoundError):
            return "not_found", (NO_MODEL if has_token else NO_MODEL_PRIVATE)(repo=repo, where=where)
        if isinstance(e, hf.RevisionNotFoundError):
            return "not_found", NO_REVISION(repo=repo, where=where)
        if isinstance(e, hf.RemoteEntryNotFoundError):
            url = str(e.response.url) if e.response is not None else ""
            if "/resolve/" not in url:
                return "not_found", THE_FILE_NOT_IN(repo=repo, where=where)
            name = url.split("/resolve/", 1)[-1].split("/", 1)[-1]
            return "not_found", FILE_NOT_IN(name=name, repo=repo, where=where)
        if isinstance(e, hf.NotASafetensorsRepoError):
            return "not_found", NO_SAFETENSORS(repo=repo)
        if isinstance(e, hf.HfHubHTTPError):
            status = e.response.status_code if e.response is not None else 0
            if status == 429:
                return "rate_limited", (RATE_LIMITED if has_token else RATE_LIMITED_TOKEN)(where=where)
            if status in (401, 403):
                return "gated", REFUSED(where=where, status=status, hint=hint)
            if status == 404:
                return "not_found", NOT_FOUND_HTTP(where=where)
            return "server", SERVER(where=where, status=status)
        if isinstance(e, httpx2.TimeoutException | TimeoutError):
            return "timeout", TIMEOUT(where=where)
        if isinstance(e, httpx2.TransportError | ConnectionError):
            return "offline", UNREACHABLE(where=where, kind=type(e).__name__, error=said(e))
        if isinstance(e, hf.SafetensorsParsingError | CheckpointError | hf.FileMetadataError | LocalModelError):
            return "malformed", said(e)
        if isinstance(e, ValueError | KeyError | TypeError):
            return "malformed", UNEXPECTED(where=where, kind=type(e).__name__, error=free(str(e)))
    return None


# ----------------------------------------------------------------------------------------------
# the client


def pick_gguf(files: Iterable[str], quant: str | None = None) -> str | None:
    """The GGUF file to use from a repo: the one matching ``quant`` (e.g. "Q4_K_M"), else Q4_K_M, else Q8_0,
    else the first; for split files, the first split."""
    names = sorted(f for f in files if f.endswith(".gguf") and "mmproj" not in f.lower())
    names = [f for f in names if not re.search(r"-\d{5}-of-\d{5}\.gguf$", f) or "-00001-of-" in f]
    if not names:
        return None
    prefs = [quant] if quant else ["Q4_K_M", "Q8_0"]
    for pref in prefs:
        key = re.sub(r"[^a-z0-9]", "", pref.lower())
        hits = [f for f in names if key in re.sub(r"[^a-z0-9]", "", Path(f).name.lower())]
        if hits:
            return hits[0]
    return None if quant else names[0]


class HubClient:
    """A small, replaceable interface to the Hub (tests give it a fake endpoint)."""

    def __init__(
        self,
        endpoint: str | None = None,
        token: str | bool | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        cache_dir: str | Path | None = None,
        offline: bool | None = None,
        cancel: threading.Event | None = None,
    ) -> None:
        self._endpoint = endpoint
        self._token = token
        self.timeout = timeout
        self._cache_dir = cache_dir
        self._offline = offline
        self.cancel = cancel

    # ---- settings, read when a call runs
    @property
    def endpoint(self) -> str:
        return hub_endpoint(self._endpoint)

    @property
    def offline(self) -> bool:
        return self._offline if self._offline is not None else offline_from_env()

    @property
    def cache_dir(self) -> str:
        from .cache import hf_cache_dir

        return str(self._cache_dir or hf_cache_dir())

    def _token_value(self) -> str | bool:
        if isinstance(self._token, str):
            return self._token or False
        if self._token is False:
            return False
        from huggingface_hub import get_token

        return get_token() or False

    def _api(self, token: str | bool) -> Any:
        from huggingface_hub import HfApi

        return HfApi(endpoint=self.endpoint, token=token, library_name="vramdesk", library_version=__version__)

    def _call(self, what: str, repo: str | None, fn: Callable[[str | bool], T], timeout: float | None = None) -> T:
        """Run ``fn(token)`` with the deadline, offline check and error mapping."""
        if self.offline:
            raise HubError("offline", FAILED(what=free(what), problem=OFFLINE()), repo=repo)
        if repo is not None and not is_repo_id(repo):
            raise HubError("not_found", FAILED(what=free(what), problem=NOT_A_REPO(repo=repo)), repo=repo)
        limit = self.timeout if timeout is None else timeout
        holder: dict[str, bool] = {}

        def job() -> T:
            token = self._token_value()
            holder["token"] = bool(token)
            return fn(token)

        try:
            return run_with_deadline(job, limit + 0.5, what, self.cancel, repo)
        except BaseException as err:
            if isinstance(err, KeyboardInterrupt | SystemExit):
                raise
            raise map_error(err, what, repo=repo, endpoint=self.endpoint, has_token=holder.get("token", False)) from err

    # ---- search
    def search(self, query: str, limit: int = 20, *, timeout: float | None = None) -> list[HubModel]:
        """Models matching ``query``, most downloaded first (text-generation and image-text-to-text)."""
        limit = max(1, min(int(limit), 100))
        t = self.timeout if timeout is None else timeout

        def run(token: str | bool) -> list[HubModel]:
            from huggingface_hub.utils._headers import build_hf_headers

            headers = build_hf_headers(token=token, library_name="vramdesk", library_version=__version__)
            results: dict[str, list[HubModel] | BaseException] = {}

            def one(tag: str) -> None:
                try:
                    results[tag] = self._search_pages(query, tag, limit, headers, t)
                except BaseException as err:
                    results[tag] = err

            threads = [threading.Thread(target=one, args=(tag,), daemon=True) for tag in SEARCH_PIPELINES]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            models: dict[str, HubModel] = {}
            errors = []
            for tag in SEARCH_PIPELINES:
                r = results[tag]
                if isinstance(r, BaseException):
                    errors.append(r)
                    continue
                for m in r:
                    models.setdefault(m.id, m)
            if errors and not models:
                raise errors[0]
            ranked = sorted(models.values(), key=lambda m: (-(m.downloads or 0), m.id.lower()))
            return ranked[:limit]

        return self._call(SEARCHING(query=query), None, run, t)

    def _search_pages(
        self, query: str, tag: str, limit: int, headers: dict[str, str], timeout: float
    ) -> list[HubModel]:
        from huggingface_hub import get_session, hf_raise_for_status

        params: list[tuple[str, str | int | float | bool | None]] = [
            ("search", query),
            ("pipeline_tag", tag),
            ("sort", "downloads"),
            ("limit", str(limit)),
        ]
        params += [("expand", e) for e in SEARCH_EXPAND]
        session = get_session()
        url: str | None = f"{self.endpoint}/api/models"
        out: list[HubModel] = []
        pages = 0
        while url and len(out) < limit and pages < 5:
            r = session.get(url, params=params if pages == 0 else None, headers=headers, timeout=timeout)
            hf_raise_for_status(r)
            try:  # a mirror's answer is untrusted input too: no NaN, no nesting past 64 levels, UTF-8
                data = jsonsafe.loads(r.content, source="")
            except jsonsafe.JsonError as err:
                raise HubError("malformed", LIST_NOT_JSON(problem=free(err.problem))) from None
            if not isinstance(data, list):
                raise HubError("malformed", NOT_A_LIST(kind=type(data).__name__))
            out.extend(HubModel.from_api(item) for item in data)
            nxt = r.links.get("next", {}).get("url")
            url = str(nxt) if nxt else None
            pages += 1
        return out[:limit]

    # ---- one model
    def model_info(self, repo: str, *, timeout: float | None = None) -> HubModel:
        t = self.timeout if timeout is None else timeout

        def run(token: str | bool) -> HubModel:
            info = self._api(token).model_info(repo, expand=list(INFO_EXPAND), timeout=t)
            raw = {k: getattr(info, k, None) for k in ("id", "downloads", "likes", "gated", "pipeline_tag", "sha")}
            raw["lastModified"] = info.last_modified.isoformat() if getattr(info, "last_modified", None) else None
            st = getattr(info, "safetensors", None)
            if st is not None:
                raw["safetensors"] = {"parameters": dict(st.parameters), "total": st.total}
            raw["config"] = getattr(info, "config", None)
            g = getattr(info, "gguf", None)
            raw["gguf"] = g if isinstance(g, dict) else None
            raw["siblings"] = [
                {"rfilename": s.rfilename, "size": s.size, "lfs": {"size": s.lfs.size} if s.lfs else None}
                for s in (info.siblings or [])
            ]
            return HubModel.from_api(raw)

        return self._call(LOOKING_UP(repo=repo), repo, run, t)

    def _head(self, repo: str, filename: str, token: str | bool, timeout: float) -> Any:
        """HEAD of a repo file without retries (fast errors for 5xx / gated / missing)."""
        from huggingface_hub import get_hf_file_metadata, hf_hub_url

        url = hf_hub_url(repo, filename, endpoint=self.endpoint)
        return get_hf_file_metadata(
            url, token=token, timeout=timeout, library_name="vramdesk", library_version=__version__
        )

    def download(self, repo: str, filename: str, *, timeout: float | None = None) -> Path:
        """A small repo file (config.json, the safetensors index) downloaded into the HF cache."""
        t = self.timeout if timeout is None else timeout

        def run(token: str | bool) -> Path:
            from huggingface_hub import hf_hub_download

            self._head(repo, filename, token, t)
            path = hf_hub_download(
                repo,
                filename,
                cache_dir=self.cache_dir,
                endpoint=self.endpoint,
                token=token,
                etag_timeout=t,
                library_name="vramdesk",
                library_version=__version__,
            )
            return Path(path)

        return self._call(DOWNLOADING(filename=filename, repo=repo), repo, run, t)

    def config(self, repo: str, *, timeout: float | None = None) -> dict[str, Any]:
        """The repo's config.json (downloaded into the HF cache, read as JSON only)."""
        path = self.download(repo, "config.json", timeout=timeout)
        try:
            return read_config(path)
        except LocalModelError as err:
            raise HubError("malformed", FAILED(what=CONFIG_OF(repo=repo), problem=said(err)), repo=repo) from err

    def safetensors_entries(
        self, repo: str, *, timeout: float | None = None
    ) -> tuple[dict[str, tuple[str, tuple[int, ...]]], int]:
        """{tensor name: (dtype, shape)} of every safetensors shard of the repo, and the number of files.

        Tries the Hub's one-request ``safetensors-metadata`` endpoint for sharded repos, then ranged reads of
        each shard's header (mirrors that lack the endpoint).
        """
        t = self.timeout if timeout is None else timeout

        def run(token: str | bool) -> tuple[dict[str, tuple[str, tuple[int, ...]]], int]:
            from huggingface_hub import errors as hf

            api = self._api(token)
            try:
                self._head(repo, "model.safetensors", token, t)
            except hf.RemoteEntryNotFoundError:
                pass
            else:
                meta = api.parse_safetensors_file_metadata(repo, "model.safetensors", timeout=t)
                return _entries([meta]), 1
            self._head(repo, "model.safetensors.index.json", token, t)  # RemoteEntryNotFound: no safetensors
            try:
                sharded = api.get_sharded_safetensors_metadata(repo, timeout=t)
                files = list(sharded.files_metadata.values())
                return _entries(files), len(files)
            except hf.HfHubHTTPError as err:
                if err.response is None or err.response.status_code not in (400, 404, 405, 501):
                    raise
            from huggingface_hub import hf_hub_download

            index = hf_hub_download(
                repo,
                "model.safetensors.index.json",
                cache_dir=self.cache_dir,
                endpoint=self.endpoint,
                token=token,
                etag_timeout=t,
            )
            from .local import safetensors_files

            shards = [p.name for p in safetensors_files(Path(index).parent)]
            metas = parallel_map(lambda f: api.parse_safetensors_file_metadata(repo, f, timeout=t), shards)
            return _entries(metas), len(shards)

        try:
            return self._call(READING_SAFETENSORS(repo=repo), repo, run, 3 * t)
        except HubError as err:
            if err.kind == "not_found" and "model.safetensors.index.json is not in" in err.message:
                raise HubError("not_found", NO_SAFETENSORS(repo=repo), repo=repo) from err
            raise

    def gguf_header(self, repo: str, filename: str, *, timeout: float | None = None) -> tuple[GgufHeader, int]:
        """The header of a .gguf file in a repo, read with growing ranged requests (at most 256 MiB), and its
        total size. Split files are read split by split; their tensors are merged."""
        t = self.timeout if timeout is None else timeout
        from .local import gguf_split_files

        folder = filename.rsplit("/", 1)[0] + "/" if "/" in filename else ""
        names = [folder + p.name for p in gguf_split_files(Path(filename))]

        def run(token: str | bool) -> tuple[GgufHeader, int]:
            from dataclasses import replace

            headers = []
            size = 0
            for name in names:
                h, n = self._gguf_one(repo, name, token, t)
                headers.append(h)
                size += n
            first = headers[0]
            if len(headers) > 1:
                first = replace(first, tensors=tuple(x for h in headers for x in h.tensors))
            return first, size

        return self._call(READING_GGUF(repo=repo, filename=filename), repo, run, 3 * t)

    def _gguf_one(self, repo: str, filename: str, token: str | bool, timeout: float) -> tuple[GgufHeader, int]:
        from huggingface_hub import get_session, hf_hub_url, hf_raise_for_status
        from huggingface_hub.utils._headers import build_hf_headers

        url = hf_hub_url(repo, filename, endpoint=self.endpoint)
        base = build_hf_headers(token=token, library_name="vramdesk", library_version=__version__)
        session = get_session()
        sizes: dict[str, int] = {}

        def fetch(start: int, end: int) -> bytes:
            headers = {**base, "Range": f"bytes={start}-{end - 1}", "Accept-Encoding": "identity"}
            with session.stream("GET", url, headers=headers, timeout=timeout, follow_redirects=True) as r:
                if r.status_code >= 400:
                    r.read()
                    hf_raise_for_status(r)
                if r.status_code != 206:
                    raise HubError("malformed", RANGE_IGNORED(filename=filename, status=r.status_code))
                m = re.match(r"bytes (\d+)-(\d+)/(\d+)", r.headers.get("Content-Range", ""))
                if not m or int(m.group(1)) != start:
                    raise HubError("malformed", BAD_RANGE(filename=filename, value=r.headers.get("Content-Range")))
                sizes["total"] = int(m.group(3))
                out = bytearray()
                for chunk in r.iter_bytes():
                    out += chunk
                    if len(out) >= end - start:
                        break
                return bytes(out[: end - start])

        first = fetch(0, GGUF_FIRST_READ)  # also learns the file size
        total = sizes["total"]
        try:
            header = parse_growing(lambda a, b: first[a:b] if b <= len(first) else fetch(a, b), total, len(first))
        except CheckpointError as err:
            raise HubError(
                "malformed", FILE_FAILED(repo=repo, filename=filename, problem=said(err)), repo=repo
            ) from err
        if header.data_end() > total:
            end = header.data_end()
            raise HubError("malformed", DATA_PAST_END(repo=repo, filename=filename, end=end, total=total))
        if header.header_end > MAX_GGUF_HEADER:  # pragma: no cover - parse_growing caps reads already
            raise HubError("malformed", HEADER_TOO_LARGE(repo=repo, filename=filename))
        return header, total


def _entries(metas: Iterable[Any]) -> dict[str, tuple[str, tuple[int, ...]]]:
    out: dict[str, tuple[str, tuple[int, ...]]] = {}
    for meta in metas:
        for name, info in meta.tensors.items():
            out[name] = (str(info.dtype).upper(), tuple(int(d) for d in info.shape))
    return out
