"""Each serving engine's own settings (vLLM, SGLang, llama.cpp, Ollama), declared with
:func:`~.option_decl.option` in the order of the window's form boxes."""

from __future__ import annotations

from typing import Literal

from .option_decl import _Frozen, option

#: Longest context accepted anywhere (tokens). Longer requests are almost always a typo.
MAX_TOKENS = 16 * 1024 * 1024
SplitMode = Literal["layer", "row"]
#: a band of vLLM releases, named by its first release ("0.10" = 0.10 to 0.16); engines/vllm_versions.py holds what
#: each band changes
VllmVersion = Literal["0.7", "0.8", "0.10", "0.17", "0.19"]


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
    #: the vLLM release: its profile run's sampler, where the CUDA graphs and the CUDA context are paid for
    version: VllmVersion = option(
        "0.19",
        label="vLLM version",
        help="The vLLM release: what its profile run's sampler allocates, and whether the CUDA graphs and the CUDA "
        "context count inside gpu_memory_utilization",
        group="vllm",
        flag="vllm_version",
        choices={
            "0.7": (
                "≤ 0.7 (V0)",
                "V0 engine: the CUDA context counts inside the budget; graphs captured after the KV pool",
            ),
            "0.8": ("0.8 - 0.9", "V1 engine: every non-torch byte, the CUDA context too, counts inside the budget"),
            "0.10": (
                "0.10 - 0.16",
                "The profile run's sampler sorts the whole vocabulary for max_num_seqs requests (about 38 B per "
                "logit); the CUDA context is outside the budget",
            ),
            "0.17": ("0.17 - 0.18", "Top-k / top-p without the sort; the CUDA context is outside the budget"),
            "0.19": ("≥ 0.19", "As 0.17, and the CUDA-graph memory can be estimated before the KV pool (the default)"),
        },
        form={"accessible": "vLLM version"},
    )
    #: VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 (vLLM 0.19 and later; vLLM's default is 0)
    estimate_cudagraphs: bool = option(
        False,
        label="CUDA-graph memory in the budget",
        help="VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 (vLLM 0.19 and later): the graphs' memory is profiled and "
        "taken out of the KV pool; off (vLLM's default): the graphs are captured after the pool, in the memory "
        "gpu_memory_utilization leaves",
        group="vllm",
        form={"when": {"version": ["0.19"], "enforce_eager": [False]}},
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
    #: llama.cpp's --fit: before loading, it prices the plan against each GPU's free memory and, when a GPU would
    #: keep less than ``fit_target_mib``, offloads fewer layers (MoE models: the experts of the last layers first);
    #: it leaves a plan alone whose -ngl or --n-cpu-moe is set (vramdesk.core.llamacpp_fit follows its order of
    #: decisions). llama.cpp turns it on by default (common/common.h ``fit_params = true``); off here, so that a
    #: plan is priced as written unless asked
    fit: bool = option(
        False,
        label="fit to free memory (--fit)",
        help="llama.cpp --fit: offload fewer layers when a GPU would keep less free memory than the margin; "
        "a plan with GPU layers or MoE experts in CPU memory set is left as it is",
        group="llamacpp",
    )
    fit_target_mib: int = option(
        1024,
        ge=0,
        le=1024 * 1024,
        label="Fit margin",
        help="llama.cpp --fit-target: the memory --fit leaves free on every GPU, MiB",
        group="llamacpp",
        form={"when": {"fit": [True]}, "beside": "fit", "step": 256, "suffix": " MiB", "accessible": "--fit margin"},
    )


#: Ollama releases whose memory rules differ (vramdesk.core.engines.ollama's ``BANDS`` says what each one changed)
OllamaVersion = Literal[
    "0.2-0.6.6", "0.6.7-0.9.2", "0.9.3-0.9.6", "0.10-0.12.3", "0.12.4-0.12.11", "0.13-0.15.4", "0.15.5-0.24"
]
OllamaKvType = Literal["f16", "q8_0", "q4_0"]
OllamaFlash = Literal["auto", "on", "off"]


class OllamaOptions(_Frozen):
    ollama_version: OllamaVersion = option(
        "0.15.5-0.24",
        label="Ollama version",
        help="The Ollama release: its default context, parallel slots, flash attention and layer fit changed "
        "between releases",
        group="ollama",
        choices={
            "0.2-0.6.6": ("0.2 - 0.6.6", "num_ctx 2048; 4 parallel slots when the model then fits, else 1"),
            "0.6.7-0.9.2": ("0.6.7 - 0.9.2", "num_ctx 4096; 2 parallel slots when the model then fits, else 1"),
            "0.9.3-0.9.6": ("0.9.3 - 0.9.6", "num_ctx at most the model's trained context"),
            "0.10-0.12.3": ("0.10 - 0.12.3", "num_ctx 4096, one slot, flash attention off unless set"),
            "0.12.4-0.12.11": ("0.12.4 - 0.12.11", "Flash attention on where the model supports it"),
            "0.13-0.15.4": ("0.13 - 0.15.4", "Layers fitted to the memory the runner measures"),
            "0.15.5-0.24": ("0.15.5 - 0.24", "num_ctx from the GPUs' memory: 4k, 32k (23 GiB) or 256k (47 GiB)"),
        },
        form={"accessible": "Ollama version"},
    )
    #: None = the release's default (OLLAMA_CONTEXT_LENGTH unset), at most the model's trained context
    num_ctx: int | None = option(
        None,
        ge=1,
        le=MAX_TOKENS,
        label="Context (num_ctx)",
        help="Tokens of context per parallel slot (num_ctx / OLLAMA_CONTEXT_LENGTH); auto = the release's "
        "default, at most the model's trained context",
        group="ollama",
        shown="auto",
        form={"step": 1024, "suffix": " tokens"},
    )
    #: None = the release's default (OLLAMA_NUM_PARALLEL unset)
    num_parallel: int | None = option(
        None,
        ge=1,
        le=512,
        label="Parallel slots",
        help="Requests served at once (OLLAMA_NUM_PARALLEL): the KV cache holds num_ctx x this many tokens; "
        "auto = the release's default",
        group="ollama",
        shown="auto",
    )
    kv_cache_type: OllamaKvType = option(
        "f16",
        label="KV cache type",
        help="OLLAMA_KV_CACHE_TYPE: q8_0 halves the KV cache, q4_0 quarters it; both need flash attention",
        group="ollama",
        choices={
            "f16": ("f16", "The default: 16-bit keys and values"),
            "q8_0": ("q8_0", "8-bit blocks: half the KV cache (needs flash attention)"),
            "q4_0": ("q4_0", "4-bit blocks: a quarter of the KV cache (needs flash attention)"),
        },
        form={"accessible": "Ollama KV cache type"},
    )
    flash_attention: OllamaFlash = option(
        "auto",
        label="Flash attention",
        help="OLLAMA_FLASH_ATTENTION: auto = the release's default (off before 0.12.4, then on where the model "
        "supports it)",
        group="ollama",
        choices={
            "auto": ("auto", "The release's default"),
            "on": ("enabled", "OLLAMA_FLASH_ATTENTION=1 (where the model supports it)"),
            "off": ("disabled", "OLLAMA_FLASH_ATTENTION=0"),
        },
        form={"accessible": "Ollama flash attention"},
    )
    #: OLLAMA_GPU_OVERHEAD (bytes in Ollama; MiB here)
    gpu_overhead_mib: int = option(
        0,
        ge=0,
        le=1_000_000,
        label="GPU overhead",
        help="OLLAMA_GPU_OVERHEAD: memory Ollama leaves free on each GPU when it fits the layers",
        group="ollama",
        form={"step": 256, "suffix": " MiB", "special": "none"},
    )
    #: None = Ollama's own fit of the layers to the GPU's free memory
    num_gpu: int | None = option(
        None,
        ge=0,
        le=100000,
        label="GPU layers (num_gpu)",
        help="Layers on the GPU (num_gpu); auto = Ollama's fit: as many as its free memory holds after its reserve",
        group="ollama",
        shown="auto",
    )
