"""Each serving engine's own settings (vLLM, SGLang, llama.cpp), declared with :func:`~.option_decl.option` in the
order of the window's form boxes."""

from __future__ import annotations

from typing import Literal

from .option_decl import _Frozen, option

#: Longest context accepted anywhere (tokens). Longer requests are almost always a typo.
MAX_TOKENS = 16 * 1024 * 1024
SplitMode = Literal["layer", "row"]


class VllmOptions(_Frozen):
    gpu_memory_utilization: float = option(
        0.9,
        gt=0.0,
        le=1.0,
        label="GPU memory utilization",
        help="Fraction of the GPU's memory vLLM takes for weights, activations and the KV pool",
        group="vllm",
        form={"minimum": 0.05, "step": 0.05, "decimals": 2},
    )
    max_num_seqs: int = option(
        256,
        ge=1,
        le=65536,
        label="Max sequences",
        help="Most sequences scheduled at once (--max-num-seqs)",
        group="vllm",
    )
    #: tokens per scheduler step; None = vLLM's default for its V1 engine (8192, at least max_model_len
    #: when chunked prefill is off)
    max_num_batched_tokens: int | None = option(
        None,
        ge=1,
        le=MAX_TOKENS,
        label="Max batched tokens",
        help="vLLM: tokens per scheduler step",
        group="hidden",
        shown="8192",
    )
    #: None = the plan's input + output (what --max-model-len should be set to for this plan); vLLM's own default
    #: is the model's context (max_position_embeddings), which the estimate checks and warns about
    max_model_len: int | None = option(
        None,
        ge=1,
        le=MAX_TOKENS,
        label="Max model length",
        help="vLLM: the longest request it accepts (--max-model-len); its start-up check needs room for one request "
        "this long. Auto = this plan's input + output (vLLM's own default is the model's context)",
        group="vllm",
        shown="plan",
    )
    enforce_eager: bool = option(
        False,
        label="enforce eager (no CUDA graphs)",
        help="Skips CUDA graph capture: less memory, slower decoding",
        group="vllm",
    )
    block_size: int = option(
        16, ge=1, le=1024, label="Block size", help="vLLM: tokens per KV cache page", group="hidden"
    )


class SglangOptions(_Frozen):
    #: None = SGLang's own rule (server_args.py ``_handle_gpu_memory_settings``): the GPU's memory less an allowance
    #: for activations, CUDA graphs and parallel buffers
    mem_fraction_static: float | None = option(
        None,
        gt=0.0,
        le=1.0,
        label="Static memory fraction",
        help="Fraction of the GPU's free memory SGLang takes up front for the weights and the KV token pool "
        "(--mem-fraction-static); auto = SGLang's rule from the GPU's memory, the prefill chunk and the CUDA-graph "
        "batch size",
        group="sglang",
        shown="auto",
        form={"minimum": 0.05, "step": 0.01, "decimals": 3},
    )
    #: None = SGLang's default for the GPU's memory (2,048 tokens below 35 GiB, 4,096 below 60 GiB, 8,192 below
    #: 160 GiB, else 16,384)
    chunked_prefill_size: int | None = option(
        None,
        ge=1,
        le=MAX_TOKENS,
        label="Chunked prefill",
        help="Prompt tokens one prefill step takes (--chunked-prefill-size); auto = SGLang's default for the GPU's "
        "memory",
        group="sglang",
        shown="auto",
        form={"step": 1024, "suffix": " tokens"},
    )
    #: None = SGLang's default for the GPU's memory and TP (8 to 512)
    cuda_graph_max_bs: int | None = option(
        None,
        ge=1,
        le=4096,
        label="CUDA-graph batch",
        help="Largest decode batch SGLang captures as a CUDA graph (--cuda-graph-max-bs); auto = SGLang's default "
        "for the GPU's memory and tensor parallel size",
        group="sglang",
        shown="auto",
        form={"step": 8, "accessible": "Largest CUDA-graph batch size"},
    )
    disable_cuda_graph: bool = option(
        False,
        label="disable CUDA graphs",
        help="SGLang --disable-cuda-graph: no graph capture, less memory outside the static fraction, slower decoding",
        group="sglang",
    )


class LlamaCppOptions(_Frozen):
    #: layers offloaded to the GPU; None = all of them (-ngl 999)
    n_gpu_layers: int | None = option(
        None,
        ge=0,
        le=100000,
        label="GPU layers",
        help="Layers on the GPU (-ngl); all = every layer, the rest run from CPU memory",
        group="llamacpp",
        shown="all",
    )
    #: MoE models: the routed-expert tensors of the first N layers stay in host memory while the rest of those
    #: layers (attention, router, shared expert) and their KV cache stay on the GPU (llama.cpp's --n-cpu-moe);
    #: N at least the layer count keeps every layer's experts there, which is llama.cpp's --cpu-moe (its pattern
    #: names the same tensors of every layer). 0 = none. One number rather than a second switch: both llama.cpp
    #: flags place the same tensors, and a plan or a comparison then has one setting for it
    n_cpu_moe: int = option(
        0,
        ge=0,
        le=100000,
        label="MoE experts in CPU memory",
        help="MoE models: the expert tensors of the first N layers stay in CPU memory (--n-cpu-moe); a number at "
        "least the layer count keeps them all there (--cpu-moe)",
        group="llamacpp",
        form={"special": "none", "suffix": " layers", "accessible": "Layers whose MoE experts stay in CPU memory"},
    )
    n_ubatch: int = option(
        512,
        ge=1,
        le=MAX_TOKENS,
        label="Micro-batch",
        help="Physical batch (-ub): sizes the compute buffer",
        group="llamacpp",
        form={"step": 128},
    )
    #: several GPUs: "layer" divides the layers between them (the default); "row" splits every weight matrix by
    #: rows over all of them and keeps the KV cache and the compute buffer on the main GPU
    split_mode: SplitMode = option(
        "layer",
        label="Split mode",
        help="How several GPUs share the model (--split-mode)",
        group="llamacpp",
        choices={
            "layer": ("layers", "Each GPU holds whole layers and their KV cache (the default)"),
            "row": (
                "rows",
                "Every matrix is split by rows over the GPUs; the KV cache and the compute buffer stay on the main GPU",
            ),
        },
        form={"when": {"gpu_count": ">1"}, "accessible": "llama.cpp split mode"},
    )
    flash_attn: bool = option(
        True,
        label="flash attention (-fa)",
        help="Smaller compute buffer; also allows a quantized V cache",
        group="llamacpp",
    )
    swa_full: bool = option(
        False,
        label="full SWA cache",
        help="llama.cpp --swa-full: sliding-window layers keep a cache for the whole context",
        group="hidden",
    )
