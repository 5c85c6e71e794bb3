"""Model search across the bundled catalog, this machine's caches and the Hub.

Two halves, so a window can show something at once and the rest when it arrives:

* :func:`local_results` -- the catalog, the HF cache and models looked at before; no network, a few ms.
* :func:`hub_results` -- the Hub's answer, with a deadline; run it on a worker thread and drop its answer if
  a newer search started (pass ``cancel`` to stop waiting at once). When the Hub cannot answer, the answer
  saved for the same query earlier is returned, marked stale, with a note that says why.

:func:`merge` de-duplicates by repo id (a model found in several places keeps every badge in ``sources``;
``source`` is the first of catalog, cache, hub) and ranks: exact id or name first, then prefixes, then
the other matches, most downloaded first.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from vramdesk.core.messages import Message, join

from .cache import AnswerCache, cached_models
from .catalog import Catalog, default_catalog
from .hub import HubClient, HubError, HubModel, display_endpoint

SOURCES = ("catalog", "cache", "hub")
HUB_SEARCH_TIMEOUT = 8.0

#: a result's detail line
PUBLISHED = Message("search.published", "published total {params}")
BUNDLED = Message("search.bundled", "bundled config")
IN_CACHE = Message("search.in_cache", "HF cache: {kind}")
#: what the HF cache holds of a model (CachedModel.kind)
CACHE_KINDS = {
    "safetensors": Message("search.cache_kind.safetensors", "safetensors"),
    "gguf": Message("search.cache_kind.gguf", "gguf"),
    "config": Message("search.cache_kind.config", "config"),
}
LOOKED_AT = Message("search.looked_at", "looked at before")
LOOKED_AT_PARAMS = Message("search.looked_at.params", "looked at before: {params}")
HUB_SAFETENSORS = Message("search.hub.safetensors", "safetensors {dtypes}")
HUB_GGUF = Message("search.hub.gguf", "GGUF")
#: where a result was found (the browser's badge word), and the browser's lines that name it
SOURCE_WORDS = {
    "catalog": Message("search.source.catalog", "catalog"),
    "cache": Message("search.source.cache", "cache"),
    "hub": Message("search.source.hub", "hub"),
}
FOUND_IN = Message("search.found_in", "found in: {sources}")
SOURCE_DETAIL = Message("search.source_detail", "{source}: {detail}")
#: the note under the results when the Hub could not answer
SAVED_AGO = Message("search.saved_ago", "showing the Hub's answer saved {age} ago")
LOCAL_ONLY = Message("search.local_only", "showing catalog and cache only")
AGE_SECONDS = Message("search.age.s", "{n} s")
AGE_MINUTES = Message("search.age.min", "{n} min")
AGE_HOURS = Message("search.age.h", "{n} h")
AGE_DAYS = Message("search.age.days", "{n} days")


@dataclass(frozen=True)
class SearchResult:
    id: str
    #: the badge: "catalog", "cache" or "hub" (the first place it was found in that order)
    source: str
    sources: tuple[str, ...]
    params: int | None = None
    downloads: int | None = None
    likes: int | None = None
    gated: bool | str = False
    pipeline_tag: str | None = None
    model_type: str | None = None
    #: a short line for the list ("published total 8.03 B", "HF cache: safetensors", "GGUF", ...)
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source": self.source,
            "sources": list(self.sources),
            "params": self.params,
            "downloads": self.downloads,
            "likes": self.likes,
            "gated": self.gated,
            "pipeline_tag": self.pipeline_tag,
            "model_type": self.model_type,
            "detail": self.detail,
        }


@dataclass
class HubAnswer:
    results: list[SearchResult] = field(default_factory=list)
    error: HubError | None = None
    #: the answer came from the offline answer cache
    stale: bool = False
    #: one line to show under the list ("Hub unreachable ...: showing catalog and cache")
    note: str = ""
    seconds: float = 0.0


def _words(text: str) -> list[str]:
    return text.lower().replace("-", " ").replace("_", " ").split()


def _matches(query: str, repo: str) -> bool:
    hay = repo.lower().replace("-", " ").replace("_", " ")
    return all(w in hay for w in _words(query))


def _rank_key(query: str, r: SearchResult) -> tuple[int, int, int, int, str]:
    q = query.strip().lower()
    rid = r.id.lower()
    name = rid.rsplit("/", 1)[-1]
    if q and q in (rid, name):
        tier = 0
    elif q and (rid.startswith(q) or name.startswith(q)):
        tier = 1
    elif _matches(query, r.id):
        tier = 2
    else:
        tier = 3
    return (tier, -(r.downloads or 0), SOURCES.index(r.source), len(rid), rid)


def merge(query: str, *groups: list[SearchResult], limit: int = 20) -> list[SearchResult]:
    """De-duplicate by repo id (case-insensitive) and rank; details from every source are combined."""
    by_id: dict[str, SearchResult] = {}
    for group in groups:
        for r in group:
            key = r.id.lower()
            old = by_id.get(key)
            if old is None:
                by_id[key] = r
                continue
            sources = tuple(s for s in SOURCES if s in old.sources or s in r.sources)
            by_id[key] = replace(
                old,
                source=sources[0],
                sources=sources,
                params=old.params if old.params is not None else r.params,
                downloads=old.downloads if old.downloads is not None else r.downloads,
                likes=old.likes if old.likes is not None else r.likes,
                gated=old.gated or r.gated,
                pipeline_tag=old.pipeline_tag or r.pipeline_tag,
                model_type=old.model_type or r.model_type,
                detail=old.detail or r.detail,
            )
    return sorted(by_id.values(), key=lambda r: _rank_key(query, r))[:limit]


def _human(n: int | None) -> str:
    if not n:
        return ""
    return f"{n / 1e9:.2f} B" if n >= 1e9 else f"{n / 1e6:.0f} M"


def local_results(
    query: str,
    limit: int = 20,
    *,
    catalog: Catalog | None = None,
    cache_dir: Path | None = None,
    answers: AnswerCache | None = None,
) -> list[SearchResult]:
    """Catalog, HF cache and models looked at before: no network, answers in milliseconds."""
    cat = catalog or default_catalog()
    out: list[SearchResult] = []
    for m in cat.search(query, limit=max(limit, 50)):
        out.append(
            SearchResult(
                id=m.id,
                source="catalog",
                sources=("catalog",),
                params=m.published_total,
                gated=m.gated,
                detail=PUBLISHED(params=_human(m.published_total)) if m.published_total else BUNDLED(),
            )
        )
    for c in cached_models(cache_dir):
        if _matches(query, c.id):
            kind = CACHE_KINDS[c.kind]() if c.kind in CACHE_KINDS else c.kind
            out.append(SearchResult(id=c.id, source="cache", sources=("cache",), detail=IN_CACHE(kind=kind)))
    store = answers if answers is not None else AnswerCache()
    for repo, summary in store.known_models().items():
        if _matches(query, repo):
            params = summary.get("params")
            out.append(
                SearchResult(
                    id=repo,
                    source="cache",
                    sources=("cache",),
                    params=params if isinstance(params, int) else None,
                    model_type=summary.get("model_type") if isinstance(summary.get("model_type"), str) else None,
                    detail=LOOKED_AT_PARAMS(params=_human(params)) if isinstance(params, int) else LOOKED_AT(),
                )
            )
    return merge(query, out, limit=limit)


def _from_hub(m: HubModel) -> SearchResult:
    detail: list[str] = []
    if m.params_by_dtype:
        detail.append(HUB_SAFETENSORS(dtypes="/".join(sorted(m.params_by_dtype))))
    if m.gguf:
        detail.append(HUB_GGUF())
    return SearchResult(
        id=m.id,
        source="hub",
        sources=("hub",),
        params=m.params_total,
        downloads=m.downloads,
        likes=m.likes,
        gated=m.gated,
        pipeline_tag=m.pipeline_tag,
        model_type=m.model_type,
        detail=join(", ", *detail) if len(detail) > 1 else detail[0] if detail else "",
    )


def _from_saved(item: dict[str, Any]) -> SearchResult | None:
    try:
        return _from_hub(HubModel.from_api(item))
    except HubError:
        return None


def hub_results(
    query: str,
    limit: int = 20,
    *,
    client: HubClient | None = None,
    answers: AnswerCache | None = None,
    timeout: float = HUB_SEARCH_TIMEOUT,
    cancel: threading.Event | None = None,
) -> HubAnswer:
    """The Hub's answer within ``timeout`` seconds (or sooner when ``cancel`` is set); never raises a
    :class:`HubError`: failures come back in ``error`` with a note, and the answer saved for this query
    earlier (if any) as stale results."""
    t0 = time.perf_counter()
    hub = client or HubClient(timeout=timeout, cancel=cancel)
    if cancel is not None and hub.cancel is None:
        hub.cancel = cancel
    store = answers if answers is not None else AnswerCache()
    endpoint = display_endpoint(hub.endpoint)
    if not query.strip():
        return HubAnswer()
    try:
        models = hub.search(query, limit, timeout=timeout)
    except HubError as err:
        ans = HubAnswer(error=err, seconds=time.perf_counter() - t0)
        saved = store.load_search(endpoint, query) if err.kind != "cancelled" else None
        if saved is not None:
            when, items = saved
            ans.results = [r for r in (_from_saved(i) for i in items) if r is not None]
            ans.stale = True
            age = _age(time.time() - when)
            ans.note = join("; ", err.message, SAVED_AGO(age=age))
        elif err.kind != "cancelled":
            ans.note = join("; ", err.message, LOCAL_ONLY())
        return ans
    store.save_search(endpoint, query, [m.to_json() for m in models])
    return HubAnswer(results=[_from_hub(m) for m in models], seconds=time.perf_counter() - t0)


def _age(seconds: float) -> str:
    if seconds < 120:
        return AGE_SECONDS(n=int(seconds))
    if seconds < 7200:
        return AGE_MINUTES(n=int(seconds // 60))
    if seconds < 172800:
        return AGE_HOURS(n=int(seconds // 3600))
    return AGE_DAYS(n=int(seconds // 86400))


def search(
    query: str,
    limit: int = 20,
    *,
    catalog: Catalog | None = None,
    client: HubClient | None = None,
    cache_dir: Path | None = None,
    answers: AnswerCache | None = None,
    timeout: float = HUB_SEARCH_TIMEOUT,
) -> tuple[list[SearchResult], HubAnswer]:
    """Everything at once (the command line): merged results and the Hub's part with its note."""
    local = local_results(query, limit, catalog=catalog, cache_dir=cache_dir, answers=answers)
    hub = hub_results(query, limit, client=client, answers=answers, timeout=timeout)
    return merge(query, local, hub.results, limit=limit), hub
