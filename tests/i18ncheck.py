"""What a Chinese reader would see as untranslated English in a localized text (shared by the i18n sweeps)."""

from __future__ import annotations

import re
from collections.abc import Collection

TOKEN = re.compile(r"(?:--)?[A-Za-z0-9_]+(?:[.+\-][A-Za-z0-9_]+)*\+?")


def english_left(text: str, ignore: Collection[str], whitelist: Collection[str]) -> list[str]:
    """Words of ``text`` that are neither identifiers nor in ``whitelist``; what the user typed, repo ids and the
    like (``ignore``), commands quoted as typed and absolute paths are removed first. Identifiers: single
    letters, tokens with a digit, underscore or dot, and command-line options."""
    for name in sorted(ignore, key=len, reverse=True):
        text = text.replace(name, " ")
    text = re.sub(r"`[^`]*`", " ", text)  # a command quoted as typed (`hf auth login`)
    text = re.sub(r"(?<![\w.])/[^\s:;,()（）：；，]*", " ", text)  # an absolute path
    return [
        tok
        for tok in TOKEN.findall(text)
        if not (len(tok) == 1 or re.search(r"[\d_.]", tok) or tok.startswith("--") or tok in whitelist)
    ]


#: words that stay as they are in the Chinese texts: names of libraries, kernels, formats, units and options.
#: Anything with a digit or an underscore (bf16, Q4_K_M, n_ctx, gpu_memory_utilization) is an identifier too,
#: and so are dotted names (llama.cpp, torch.cat, workload.batch), command-line options (--pp) and single letters
#: (the formulas' n, s, k, v, x, B); GPU names, model ids and what the user typed are removed first.
CORE_WHITELIST = frozenset(
    [
        "GiB",
        "MiB",
        "GB",
        "MB",
        "B/token",
        "B/param",
        "GB/s",
        "KV",
        "GPU",
        "CPU",
        "RAM",
        "PCIe",
        "accelerate",
        "shard-grad-op",
        "row",  # the value of llama.cpp's --split-mode, quoted as typed
        "NVLink",
        "CUDA",
        "cuBLAS",
        "NCCL",
        # vLLM's MXFP4 kernels and the GPU architectures they are chosen by
        "Triton",
        "Marlin",
        "FlashInfer",
        "ROCm",
        "Hopper",
        "Blackwell",
        "PyTorch",
        "torch",
        "torchtune",
        "Liger",
        "nvidia-smi",
        "autocast",
        "foreach",
        "fused",
        "sqrt",
        "absmax",
        "nll",
        "log-softmax",
        "log-sum-exp",
        "SDPA",
        "logits",
        "token",
        "DynamicCache",
        "transformers",
        "vLLM",
        "vllm",
        "SGLang",
        "sglang",
        "Ollama",
        "ollama",
        "llamacpp",
        "ggml",
        "ggml-cuda",
        "GGUF",
        "GPTQ",
        "AWQ",
        "GEMM",
        "exllama",
        "bitsandbytes",
        "LoRA",
        "QLoRA",
        "DoRA",
        "dropout",
        "FSDP",
        "DDP",
        "DeepSpeed",
        "ZeRO",
        "AdamW",
        "Adam",
        "adamw",
        "adamw-fused",
        "adamw-forloop",
        "adamw-torch2.0",
        # the optimizers of core/optimizers/ by their packages' names, and GaLore's factorisation
        "galore-adamw",
        "galore-adamw-8bit",
        "apollo",
        "apollo-mini",
        "Adam-mini",
        "torchao",
        "LOMO",
        "AdaLomo",
        "SVD",
        "eps",
        "tanh",
        "peft",
        "AutoAWQ",
        "sgd",
        "SGD",
        "lion",
        "Adafactor",
        "AMP",
        "HF",
        "Trainer",
        "RoPE",
        "MLP",
        "MoE",
        "MLA",
        "SwiGLU",
        "FFN",
        "KQ",
        "Gated",
        "DeltaNet",
        "delta",
        "ubatch",
        "top-k",
        "all-reduce",
        "all-linear",
        "gpt-oss",
        "act-order",
        "eager",
        "flash-attention",
        "flash-attn",
        "kernels",
        "sink",
        "TFLOPS",
        "TFLOP",
        "GFLOP",
        "FLOPs",
        "MFU",
        "TF",
        "Psi",
        "TP",
        "dp",
        "tp",
        "pp",
        "PR",
        "us",
        "ms",
        "auto",
        "reserved",
        "allocated",
        "fbgemm",
        "e4m3",
        "CUDACachingAllocator",
        "trace-oracle",
        "False",
        "True",
        "BA",
    ]
)


def without_id(text: str) -> list[str]:
    """The pieces of a core text that carry no message id (so the window cannot translate them by id): the text
    itself when it is a plain ``str`` or a :func:`~vramdesk.core.messages.free` text, else the pieces of a
    :func:`~vramdesk.core.messages.join` and the nested texts of a message, in turn. A plain ``str`` value of a
    message (a GPU, a model, a number written out) is kept as it is by design and does not count."""
    from vramdesk.core.messages import Text

    if not isinstance(text, Text):
        return [text] if text else []
    if text.parts:
        return [piece for part in text.parts for piece in without_id(part)]
    if not text.id:
        return [str(text)] if text else []
    return [piece for value in text.args.values() if isinstance(value, Text) for piece in without_id(value)]
