"""What changes vLLM's start-up memory from one release to the next, by band of releases: the sampler its profile
run warms up, where the CUDA graphs are paid for, and which non-torch memory sits inside gpu_memory_utilization.

Each rule names the vLLM (or PyTorch) file it was read from; a band edge that could not be pinned to a release tag
says so. Nothing here is fitted to start-up logs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ..engine_options import VllmVersion

#: the bands in release order, each with its first release
_BAND_START: tuple[tuple[VllmVersion, tuple[int, int]], ...] = (
    ("0.7", (0, 0)),
    ("0.8", (0, 8)),
    ("0.10", (0, 10)),
    ("0.17", (0, 17)),
    ("0.19", (0, 19)),
)

#: the window's and the report's name of each band
BAND_LABELS: dict[VllmVersion, str] = {
    "0.7": "≤ 0.7 (V0)",
    "0.8": "0.8 - 0.9",
    "0.10": "0.10 - 0.16",
    "0.17": "0.17 - 0.18",
    "0.19": "≥ 0.19",
}

#: bytes one logit of the profile run's sampler takes at the peak of a full-vocabulary sort, beyond the logits
#: themselves and their fp32 copy (Sampler.forward, vllm/v1/sample/sampler.py, casts them to fp32; none when they
#: are fp32 already), in vLLM 0.10-0.16 with PyTorch's CUDA sort:
#: - apply_top_k_top_p (vllm/v1/sample/ops/topk_topp_sampler.py, the PyTorch path) sorts them:
#:   ``logits.sort(dim=-1)`` returns fp32 values and int64 indices, 4 + 8 B;
#: - PyTorch's stable sort (aten/src/ATen/native/cuda/SortStable.cu, segmented_sort_pairs) allocates int64
#:   reverse indices, 8 B, and cub's DeviceSegmentedRadixSort::SortPairs (the overload without DoubleBuffer) keeps
#:   an alternate copy of the keys and values in its temporary storage, 4 + 8 B.
#: The masks and probabilities made after the sort (1 + 4 + 1 B) are smaller than the sort's own buffers, which are
#: freed when it returns.
SORT_BYTES_PER_LOGIT = 4 + 8 + 8 + 4 + 8
#: bytes one logit takes beyond the logits and their fp32 copy where a Triton kernel applies top-k / top-p (vLLM
#: 0.17 on, topk_topp_triton.py apply_top_k_top_p_triton: it masks the fp32 logits in place): the probabilities
#: (TopKTopPSampler.forward_native: ``logits.softmax(dim=-1, dtype=torch.float32)``) and the exponential noise
#: random_sample draws beside them (``torch.empty_like(probs).exponential_()``), 4 + 4 B. The kernel's own buffer, one
#: fp32 row of the vocabulary per SM (0.1 GiB for a 201,088-token vocabulary on 132 SMs), is not counted: the GPU
#: catalog holds no SM count.
TRITON_BYTES_PER_LOGIT = 4 + 4
#: apply_top_k_top_p (topk_topp_sampler.py, 0.17 on) takes the Triton kernel for batches of this many rows or more,
#: PyTorch's sort below
TRITON_MIN_ROWS = 8


@dataclass(frozen=True)
class VllmRules:
    """The memory rules of one band of vLLM releases."""

    band: VllmVersion
    #: what the profile run's sampler allocates for top-k / top-p: "sort" (the whole vocabulary sorted, 38 B a bf16
    #: logit), "triton" (masked in place, 14 B a bf16 logit; the sort below TRITON_MIN_ROWS requests), "light" (the
    #: allowance of the releases not read: the fp32 logits twice, added to the forward's peak)
    sampler: Literal["light", "sort", "triton"]
    #: the CUDA context present before the model loads is outside gpu_memory_utilization (the profile counts only
    #: the non-torch memory that grows during the profile run); False: vLLM counts every non-torch byte on the GPU,
    #: the context included, inside it
    context_outside_budget: bool
    #: the release can profile the CUDA-graph memory before it sizes the KV pool
    #: (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1)
    can_estimate_graphs: bool

    @property
    def label(self) -> str:
        return BAND_LABELS[self.band]


#: - V0 (vllm/worker/worker.py, determine_num_available_blocks, and vllm/utils.py memory_profiling of 0.6.5 on): the
#:   non-torch memory measured counts the CUDA context (vLLM's PR 10511 logs print 1.8 GiB on one H100); the graphs
#:   are captured after the cache is allocated (Worker.initialize_cache -> _warm_up_model). V0's sampler (its
#:   profile run samples with top-k and top-p too) was not read for this: today's rule (the fp32 logits twice) is
#:   kept.
#: - 0.8-0.9 (vllm/v1/worker/gpu_worker.py, determine_available_memory): available = total x utilization - (torch
#:   peak + every non-torch byte on the GPU: total - free - torch's allocated), so the context is inside the budget;
#:   compile_or_warm_up_model captures the graphs after initialize_from_config has allocated the pool. The sampler
#:   these releases ran in the profile (FlashInfer's when installed, else the sort) is not pinned: today's rule
#:   (the fp32 logits twice) is kept.
#: - 0.10-0.16: memory_profiling (vllm/utils) takes its baseline snapshot at init_device, after the context exists,
#:   and counts the non-torch increase only; the profile run's _dummy_sampler_run (vllm/v1/worker/gpu_model_runner.py)
#:   samples min(max_num_seqs, max_num_batched_tokens) dummy requests with top_k = vocab - 1 and top_p = 0.9, which
#:   the PyTorch path of apply_top_k_top_p meets with a sort of the whole vocabulary (SORT_BYTES_PER_LOGIT). That
#:   the PyTorch path (not FlashInfer's sampler) ran, and the band's two edges, are read from the start-up logs of
#:   one model at one setting (0.11 and 0.16 show the sort's peak, 0.17 does not); the release tags of the two
#:   changes were not read.
#: - 0.17-0.18: apply_top_k_top_p takes a Triton kernel for batches of 8 or more (topk_topp_triton.py, after the
#:   Qrita paper of February 2026, arXiv 2602.01518), which masks the fp32 logits in place: no sort
#:   (TRITON_BYTES_PER_LOGIT).
#: - 0.19 and later: as 0.17, and gpu_worker.py can profile the CUDA graphs (profile_cudagraph_memory) before the
#:   pool is sized; the estimate comes out of the pool only with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 (envs.py:
#:   default 0), otherwise the graphs are captured after the pool, as before.
RULES: dict[VllmVersion, VllmRules] = {
    "0.7": VllmRules("0.7", sampler="light", context_outside_budget=False, can_estimate_graphs=False),
    "0.8": VllmRules("0.8", sampler="light", context_outside_budget=False, can_estimate_graphs=False),
    "0.10": VllmRules("0.10", sampler="sort", context_outside_budget=True, can_estimate_graphs=False),
    "0.17": VllmRules("0.17", sampler="triton", context_outside_budget=True, can_estimate_graphs=False),
    "0.19": VllmRules("0.19", sampler="triton", context_outside_budget=True, can_estimate_graphs=True),
}

_RELEASE = re.compile(r"(\d+)\.(\d+)")


def band_of(version: str) -> VllmVersion:
    """The band a release string falls in: ``"0.11.2"``, ``"~0.10.1"``, ``"0.6.4.x"``, ``"0.19.0"``. A string with no
    ``major.minor`` in it is a ValueError naming it."""
    found = _RELEASE.search(version)
    if found is None:
        raise ValueError(f"not a vLLM release: {version!r} (expected a version such as 0.11.2)")
    release = (int(found.group(1)), int(found.group(2)))
    band: VllmVersion = _BAND_START[0][0]
    for name, start in _BAND_START:
        if release >= start:
            band = name
    return band


def sampler_kind(rules: VllmRules, seqs: int) -> Literal["light", "sort", "triton"]:
    """What the profile run's sampler does for ``seqs`` dummy requests in this band."""
    if rules.sampler == "triton" and seqs < TRITON_MIN_ROWS:
        return "sort"
    return rules.sampler


def sampler_bytes_per_logit(kind: Literal["sort", "triton"], logits_bytes: int) -> int:
    """Bytes one logit takes at the sampler's peak: the logit in the model's dtype (``logits_bytes``), its fp32 copy
    (none when it is fp32 already) and what top-k / top-p and the sampling allocate beside it."""
    fp32_copy = 0 if logits_bytes == 4 else 4
    return logits_bytes + fp32_copy + (SORT_BYTES_PER_LOGIT if kind == "sort" else TRITON_BYTES_PER_LOGIT)


def sort_sampler_bytes(seqs: int, vocab: int, logits_bytes: int) -> int:
    """The peak of the profile run's sampler when top-k / top-p sort the whole vocabulary: ``seqs`` rows of
    ``vocab`` logits (:func:`sampler_bytes_per_logit`)."""
    return seqs * vocab * sampler_bytes_per_logit("sort", logits_bytes)
