"""Model reference -> ModelFacts: the bundled catalog first, then local files.

The HF cache and the Hub join this chain with the "Model sources" work; until then an unknown repo id gets
a message that says so.
"""

from __future__ import annotations

from pathlib import Path

from vramdesk.core.architecture import ConfigError
from vramdesk.core.estimate import ModelFacts, model_facts
from vramdesk.core.gpu import GpuSpec

from .catalog import Catalog, CatalogError, default_catalog
from .local import LocalModelError, looks_like_path, read_config


class ResolveError(LookupError):
    """A model or GPU that cannot be found or read; the message says what and why."""


def resolve_model(ref: str, catalog: Catalog | None = None) -> ModelFacts:
    cat = catalog or default_catalog()
    if cat.find(ref) is not None:
        return cat.facts(ref)
    if looks_like_path(ref):
        path = Path(ref).expanduser()
        if path.suffix == ".gguf":
            raise ResolveError(f"{path}: reading GGUF headers is not available yet; pass the model's config.json")
        try:
            config = read_config(path)
            return model_facts(config, str(path))
        except LocalModelError as err:
            raise ResolveError(str(err)) from err
        except ConfigError as err:
            raise ResolveError(f"{path}: {err}") from err
    try:
        cat.get(ref)
    except CatalogError as err:
        raise ResolveError(f"{err}; Hub look-ups are not available yet: pass a local config.json") from err
    raise ResolveError(f"model '{ref}' not found")  # pragma: no cover - get() raised above


def resolve_gpu(name: str | None, catalog: Catalog | None = None) -> GpuSpec | None:
    if not name:
        return None
    cat = catalog or default_catalog()
    try:
        return cat.gpu(name)
    except CatalogError as err:
        raise ResolveError(str(err)) from err
