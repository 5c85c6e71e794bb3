"""The bundled catalog: model configs with their published parameter totals, and GPU specs.

Everything here ships inside the package (``vramdesk/resources`` in a wheel or a PyInstaller bundle,
``resources/`` at the top of a source checkout), so the app works offline at first start.
"""

from __future__ import annotations

import csv
import difflib
import json
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from vramdesk.core.facts import ModelFacts, model_facts
from vramdesk.core.gpu import GIB, MIB, GpuSpec
from vramdesk.core.messages import Message, join
from vramdesk.core.quant_config import format_from_quantization_config

RESOURCES_MISSING = Message("catalog.resources_missing", "vramdesk resources not found (looked in {folders})")
MODEL_NOT_IN_CATALOG = Message("catalog.model_unknown", "model '{model}' is not in the bundled catalog")
GPU_NOT_IN_CATALOG = Message("catalog.gpu_unknown", "GPU '{gpu}' is not in the GPU catalog")
GPU_AMBIGUOUS = Message("catalog.gpu_ambiguous", "GPU '{gpu}' is ambiguous: {options}")
DID_YOU_MEAN = Message("catalog.did_you_mean", "did you mean {names}?")
TIED_COPY = Message(
    "catalog.tied_copy",
    "tie_word_embeddings is true, yet the checkpoint also stores lm_head.weight ({params:,} parameters): the Hub "
    "lists {stored:,}; transformers ties them on load, so memory counts it once",
)
FP8_SCALES = Message(
    "catalog.fp8_scales",
    "the checkpoint also stores {scales:,} fp32 scale elements next to its fp8 weights, which the Hub counts as "
    "parameters",
)
PUBLISHED = Message("catalog.published", "published total: {total}")


class CatalogError(LookupError):
    """A name that is not in the catalog; the message suggests close matches (a
    :class:`~vramdesk.core.messages.Text`, ``args[0]``)."""


def _unknown(message: str, close: list[str]) -> str:
    return join("; ", message, DID_YOU_MEAN(names=", ".join(close))) if close else message


def resources_dir() -> Path:
    """Where the runtime assets are: in the installed package, a PyInstaller bundle, or the source tree."""
    here = Path(__file__).resolve().parent.parent
    candidates = [here / "resources", here.parent / "resources"]
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        candidates.insert(0, Path(bundle) / "vramdesk" / "resources")
    for c in candidates:
        if (c / "catalog" / "models.json").is_file():
            return c
    raise FileNotFoundError(RESOURCES_MISSING(folders=", ".join(map(str, candidates))))


@dataclass(frozen=True)
class CatalogModel:
    id: str
    file: str
    published_total: int | None
    published_text: str
    license: str
    gated: bool
    stored_lm_head_copy: bool = False
    #: a variant that shares its base's architecture (an Instruct or a quantised repo)
    derived_from: str | None = None
    #: top-level config keys the variant changes (its quantization_config, dtype)
    config_patch: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        return self.id.split("/")[-1]


#: compute capability by GPU family (for the cuBLAS workspace size and kernels); NVML reports it for
#: detected GPUs
_SM = (
    ("H20", "9.0"),
    ("H100", "9.0"),
    ("H200", "9.0"),
    ("GH200", "9.0"),
    ("H800", "9.0"),
    ("GB200", "10.0"),
    ("B200", "10.0"),
    ("RTX 50", "12.0"),
    ("RTX PRO 6000", "12.0"),
    ("A100", "8.0"),
    ("A800", "8.0"),
    ("A10", "8.6"),
    ("A6000", "8.6"),
    ("RTX 30", "8.6"),
    ("L40", "8.9"),
    ("L4", "8.9"),
    ("RTX 40", "8.9"),
    ("RTX 6000 Ada", "8.9"),
    ("T4", "7.5"),
    ("V100", "7.0"),
    ("Jetson AGX Orin", "8.7"),
)

#: what NVML reports as total memory where it differs from the vendor figure read as GiB (driver/ECC
#: reservations). Values as commonly printed by nvidia-smi; others use vendor GB as GiB.
_NVML_TOTAL_MIB = {
    "T4": 15360,
    "L4": 23034,
    "A10": 23028,
    "A10G": 23028,
    "L40S": 46068,
    "H100 SXM": 81559,
    "H100 PCIe": 81559,
    "H100 NVL": 95830,
    "H200 SXM": 143771,
    "H20": 97871,
    "RTX 4090": 24564,
    "RTX 3090": 24576,
    "RTX A6000": 49140,
    "RTX 6000 Ada": 49140,
    "RTX 5090": 32607,
}


def _sm_for(name: str, vendor: str) -> str | None:
    if not vendor.startswith("NVIDIA"):
        return None
    for prefix, sm in _SM:
        if prefix in name:
            return sm
    return None


def _gpu_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _float(v: str | None) -> float | None:
    try:
        return float(v) if v else None
    except ValueError:
        return None


class Catalog:
    def __init__(self, root: Path | None = None) -> None:
        self.root = (root or resources_dir()) / "catalog"
        data = json.loads((self.root / "models.json").read_text(encoding="utf-8"))
        self._models = [CatalogModel(**m) for m in data["models"]]
        self._by_id = {m.id.lower(): m for m in self._models}
        self._facts: dict[str, ModelFacts] = {}
        self._gpus = self._load_gpus()

    # ---- models
    def models(self) -> list[CatalogModel]:
        return list(self._models)

    def find(self, model_id: str) -> CatalogModel | None:
        key = model_id.strip().lower()
        if key in self._by_id:
            return self._by_id[key]
        # a bare name ("Qwen3-4B") when it is unambiguous
        hits = [m for m in self._models if m.name.lower() == key]
        return hits[0] if len(hits) == 1 else None

    def get(self, model_id: str) -> CatalogModel:
        m = self.find(model_id)
        if m is None:
            close = difflib.get_close_matches(model_id, [x.id for x in self._models], n=3, cutoff=0.5)
            raise CatalogError(_unknown(MODEL_NOT_IN_CATALOG(model=model_id), close))
        return m

    def config(self, model_id: str) -> dict[str, Any]:
        m = self.get(model_id)
        data: dict[str, Any] = json.loads((self.root / "configs" / m.file).read_text(encoding="utf-8"))
        if m.config_patch:
            data.update(m.config_patch)
        return data

    def context_length(self, model_id: str) -> int | None:
        cfg = self.config(model_id)
        text = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else cfg
        for key in ("max_position_embeddings", "n_positions", "seq_length"):
            v = text.get(key) if isinstance(text, dict) else None
            if isinstance(v, int) and v > 0:
                return v
        return None

    def facts(self, model_id: str) -> ModelFacts:
        m = self.get(model_id)
        hit = self._facts.get(m.id)
        if hit is None:
            notes: list[str] = []
            stored = None
            facts = model_facts(self.config(m.id), m.id)
            if m.stored_lm_head_copy:
                extra = facts.arch.vocab * facts.arch.hidden
                stored = facts.counts.checkpoint + extra
                notes.append(TIED_COPY(params=extra, stored=stored))
            scales = _fp8_scale_elements(facts)
            if scales:
                stored = (stored or facts.counts.checkpoint) + scales
                notes.append(FP8_SCALES(scales=scales))
            if m.published_total:
                notes.append(PUBLISHED(total=m.published_text))
            hit = ModelFacts(
                model_id=m.id,
                arch=facts.arch,
                tensors=facts.tensors,
                counts=facts.counts,
                notes=tuple(notes),
                stored_total=stored,
            )
            self._facts[m.id] = hit
        return hit

    def search(self, query: str, limit: int = 20) -> list[CatalogModel]:
        words = query.lower().replace("-", " ").split()
        scored = []
        for m in self._models:
            hay = m.id.lower().replace("-", " ")
            if all(w in hay for w in words):
                scored.append((len(m.id), m))
        return [m for _, m in sorted(scored, key=lambda x: x[0])][:limit]

    # ---- GPUs
    def _load_gpus(self) -> list[GpuSpec]:
        out: list[GpuSpec] = []
        for fname in ("gpus.csv", "gpus_extra.csv"):
            path = self.root / fname
            if not path.is_file():
                continue
            for row in _gpu_rows(path):
                name = row["gpu"].strip()
                gb = _float(row.get("memory_gb_vendor"))
                if not name or not gb:
                    continue
                mib = _NVML_TOTAL_MIB.get(name)
                mem = mib * MIB if mib else int(gb * GIB)
                out.append(
                    GpuSpec(
                        name=name,
                        memory_bytes=mem,
                        vendor=row.get("vendor", "NVIDIA").split(" ")[0],
                        compute_capability=_sm_for(name, row.get("vendor", "")),
                        bandwidth_gbps=_float(row.get("memory_bandwidth_gbps")),
                        bf16_tflops=_float(row.get("fp16_bf16_tensor_dense_tflops")),
                    )
                )
        return out

    def gpus(self) -> list[GpuSpec]:
        return list(self._gpus)

    def gpu(self, name: str) -> GpuSpec:
        key = name.strip().lower().replace("nvidia ", "").replace("geforce ", "")
        for g in self._gpus:
            if g.name.lower() == key:
                return g
        starts = [g for g in self._gpus if g.name.lower().startswith(key)]
        if len(starts) == 1:
            return starts[0]
        contains = [g for g in self._gpus if key in g.name.lower()]
        if len(contains) == 1:
            return contains[0]
        options = starts or contains
        if options:
            raise CatalogError(GPU_AMBIGUOUS(gpu=name, options=", ".join(g.name for g in options)))
        close = difflib.get_close_matches(name, [g.name for g in self._gpus], n=3, cutoff=0.4)
        raise CatalogError(_unknown(GPU_NOT_IN_CATALOG(gpu=name), close))


def _fp8_scale_elements(facts: ModelFacts) -> int:
    """fp32 scale tensors an fp8 checkpoint stores next to its weights (one per tensor or per block)."""
    qc = facts.arch.quantization_config
    if not qc or qc.get("quant_method") != "fp8":
        return 0
    fmt = format_from_quantization_config(qc, base_dtype="bf16")
    total = 0
    for t in facts.tensors:
        if t.part == "vision" or not fmt.is_quantized(t.name, t.role, shape=t.shape):
            continue
        experts = t.shape[0] if len(t.shape) == 3 else 1
        shape = t.shape[1:] if len(t.shape) == 3 else t.shape
        per = fmt.tensor_bytes(t.name, t.role, shape, t.layer, facts.arch.n_layers) - shape[0] * shape[1]
        total += experts * per // 4
    return total


@cache
def default_catalog() -> Catalog:
    return Catalog()
