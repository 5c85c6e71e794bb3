"""vLLM's MoE layers: the expert weights as its MXFP4 kernels lay them out (padded), and the fused-MoE buffers its
profile run allocates for max_num_batched_tokens tokens.

Both are arithmetic on shapes, read from vLLM's source (each rule names its file and function); nothing here is fitted
to logs.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import constants as K
from ..architecture import Architecture, MoeSpec
from ..gpu import GpuSpec
from ..memo import derived
from ..messages import Later, Message, Text

MXFP4_PADDING = Message(
    "vllm.mxfp4.padding",
    "vLLM's {backend} MXFP4 MoE kernel pads the expert weights to {intermediate} intermediate x {hidden} hidden per "
    "GPU (from {raw_intermediate} x {raw_hidden}){layout}: +{extra:.2f} GiB over the checkpoint's layout",
)
MXFP4_HOPPER_LAYOUT = Message(
    "vllm.mxfp4.hopper_layout", ", then to Hopper's swizzled layout (packed input bytes to 64, output rows to 256)"
)
FUSED_MOE = Message(
    "vllm.fused_moe",
    "fused MoE: {tokens} tokens x top-{top_k} through the experts, intermediate caches of {tokens} x {top_k} x "
    "({w1} + {w2}) x {c} B, router logits and the output",
)

_BACKEND_NAMES = {"triton": "Triton", "flashinfer": "FlashInfer", "marlin": "Marlin", "rocm": "ROCm Triton"}


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def mxfp4_backend(gpu: GpuSpec | None) -> str | None:
    """The MXFP4 MoE kernel vLLM picks on ``gpu`` (quantization/mxfp4.py, get_mxfp4_backend, with vLLM's default
    environment and its release images, which ship triton_kernels and FlashInfer), or None with no GPU chosen.

    Keyed on the compute capability: 9.0 -> "triton", 10.x -> "flashinfer", other CUDA GPUs -> "marlin"; AMD ->
    "rocm". A GPU with no capability known is taken as Marlin (vLLM's fallback on CUDA)."""
    if gpu is None:
        return None
    if gpu.vendor.upper() == "AMD":
        return "rocm"
    major = gpu.sm_major
    if major == 9:
        return "triton"
    if major == 10:
        return "flashinfer"
    return "marlin"


@dataclass(frozen=True)
class ExpertLayout:
    """One MoE layer's routed experts on one tensor-parallel rank: the sizes the kernel runs with and the bytes."""

    intermediate: int
    hidden: int
    bytes: int


def _mxfp4_matrix(out: int, in_: int, backend: str | None) -> int:
    """Bytes of one expert's (out, in) MXFP4 matrix: packed e2m1 values (2 a byte) and one E8M0 scale per 32 inputs,
    in the layout the backend stores (triton on Hopper: the swizzled, padded layout of triton_kernels)."""
    block = 32
    if backend != "triton":
        return out * (in_ // 2) + out * (in_ // block)
    value_in, value_out = K.VLLM_TRITON_HOPPER_VALUE_ALIGN
    scale_out, scale_in = K.VLLM_TRITON_HOPPER_SCALE_ALIGN
    values = _round_up(in_ // 2, value_in) * _round_up(out, value_out)
    scales = _round_up(out, scale_out) * _round_up(in_ // block, scale_in)
    return values + scales


def mxfp4_expert_layout(
    moe: MoeSpec, hidden: int, tp: int, backend: str | None, *, gfx950: bool = False
) -> ExpertLayout:
    """One layer's routed experts on one rank as vLLM's Mxfp4MoEMethod holds them (create_weights: w13 (E, 2 x I,
    H / 2) and w2 (E, H, I / 2) uint8 with E8M0 scales (.., / 32), biases (E, 2 x I) and (E, H)), I the
    intermediate size per partition and both sizes padded for the backend; ``backend`` None: the checkpoint's own
    layout."""
    inter = -(-moe.expert_intermediate // max(1, tp))
    h = hidden
    bias_bytes = 2
    if backend is not None:
        pad_i, pad_h = K.VLLM_MXFP4_PAD[backend]
        if backend == "rocm" and gfx950:
            pad_i = pad_h = K.VLLM_MXFP4_PAD_GFX950
        inter, h = _round_up(inter, pad_i), _round_up(h, pad_h)
        if backend == "triton":
            bias_bytes = 4
    per_expert = _mxfp4_matrix(2 * inter, h, backend) + _mxfp4_matrix(h, inter, backend)
    biases = (2 * inter + h) * bias_bytes if moe.expert_bias else 0
    return ExpertLayout(inter, h, moe.num_experts * (per_expert + biases))


def mxfp4_padding(arch: Architecture, gpu: GpuSpec | None, tp: int, pp: int) -> tuple[int, Text | None]:
    """Bytes the backend's layout adds to one rank's MXFP4 experts over the checkpoint's layout split evenly (one
    pipeline stage's share of the MoE layers), and the sentence that says so; (0, None) with no GPU chosen."""
    backend = mxfp4_backend(gpu)
    moe_layers = [layer.moe for layer in arch.layers if layer.moe is not None]
    if backend is None or not moe_layers:
        return 0, None
    gfx950 = gpu is not None and any(k in gpu.name.upper() for k in ("MI350", "MI355"))
    added = 0.0
    shown: tuple[ExpertLayout, int, int] | None = None
    for moe in moe_layers:
        padded = mxfp4_expert_layout(moe, arch.hidden, tp, backend, gfx950=gfx950)
        plain = mxfp4_expert_layout(moe, arch.hidden, 1, None)
        added += padded.bytes - plain.bytes / tp
        shown = shown or (padded, -(-moe.expert_intermediate // max(1, tp)), arch.hidden)
    extra = max(0, round(added / max(1, pp)))
    if shown is None or extra == 0:
        return 0, None
    layout, raw_i, raw_h = shown
    note = MXFP4_PADDING(
        backend=_BACKEND_NAMES[backend],
        intermediate=layout.intermediate,
        hidden=layout.hidden,
        raw_intermediate=raw_i,
        raw_hidden=raw_h,
        layout=MXFP4_HOPPER_LAYOUT() if backend == "triton" else "",
        extra=extra / 2**30,
    )
    return extra, note


def fused_moe_transient(
    arch: Architecture, tokens: int, tp: int, c: int, mxfp4: str | None = None
) -> tuple[int, Later | None]:
    """The largest MoE layer's buffers on one rank while the profile run pushes ``tokens`` tokens through it, and
    the sentence that says so; (0, None) for a dense model.

    vLLM's fused-MoE modular kernel (fused_moe/modular_kernel.py) takes at most VLLM_FUSED_MOE_CHUNK_SIZE tokens
    at a time and allocates the expert kernel's workspace_shapes in the activation dtype: TritonExperts
    (fused_moe/fused_moe.py) workspace13 (M, top_k, max(N / 2, K)), workspace2 (M, top_k, max(N, K)) and the output
    (M, K), N the gate+up width 2 x intermediate per rank and K the hidden size; the MXFP4 kernels (Marlin, OAI Triton)
    allocate no more. Beside them live the layer's input and output hidden states (M, K), the router logits (M, E)
    in fp32 and the top-k weights and ids (M, top_k) x 4 B each."""
    best, text = 0, None
    m = min(tokens, K.VLLM_FUSED_MOE_CHUNK)
    for moe in derived(arch, "distinct MoE layers", lambda: tuple(dict.fromkeys(x.moe for x in arch.layers if x.moe))):
        inter = -(-moe.expert_intermediate // max(1, tp))
        if mxfp4 is not None:
            inter = mxfp4_expert_layout(moe, arch.hidden, tp, mxfp4).intermediate
        n, k = 2 * inter, arch.hidden
        w1, w2 = max(n // 2, k), max(n, k)
        workspace = m * moe.top_k * (w1 + w2) * c + m * k * c
        around = 2 * tokens * k * c + tokens * moe.num_experts * 4 + tokens * moe.top_k * 8
        b = workspace + around
        if b > best:
            best = b
            text = FUSED_MOE.later(tokens=m, top_k=moe.top_k, w1=w1, w2=w2, c=c)
    return best, text
