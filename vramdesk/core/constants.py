"""Runtime constants that no config file carries, each with where it comes from.

They are not fitted to the calibration set: each is a documented property of the software stack. The
estimate lists the ones it used (``Estimate.constants``) so a user can see and question them.
"""

from __future__ import annotations

from .gpu import MIB
from .messages import text

#: cuBLAS workspace PyTorch allocates through its caching allocator for the first GEMM on a stream (so it
#: is inside ``max_memory_allocated``). PyTorch's default CUBLAS_WORKSPACE_CONFIG is ``:4096:2:16:8``
#: (2 x 4 MiB + 8 x 16 KiB) before Hopper and ``:4096:8:16:8`` on sm90+ (c10/cuda/CUDABlasHandlePool:
#: getChosenWorkspaceSize); cuBLASLt shares it in recent releases.
CUBLAS_WORKSPACE_PRE_HOPPER = 2 * 4096 * 1024 + 8 * 16 * 1024
CUBLAS_WORKSPACE_HOPPER = 8 * 4096 * 1024 + 8 * 16 * 1024
#: workspaces are keyed by (cuBLAS handle, stream) and handles are per thread (CUDABlasHandlePool.cpp,
#: DeviceThreadHandlePool): a training step's forward (Python thread) and backward (the autograd engine's device
#: thread) hold one each. Measured: twelve traced steps on an H200 (torch 2.11) allocated 64-68 MiB above the
#: traced tensors (benchmarks/data/device/).
CUBLAS_WORKSPACES_TRAINING = 2

#: CUDA context + the kernels of torch/cuBLAS loaded lazily (CUDA_MODULE_LOADING=LAZY, the default since
#: CUDA 12.2): not in torch's counters, visible in nvidia-smi. Reports range 0.3-0.8 GiB per process
#: (discuss.pytorch.org threads on the "memory floor"; shared/research/trace-oracle.md §5).
CUDA_CONTEXT_TORCH = 500 * MIB
#: the same on Hopper and later, measured: nvidia-smi's per-process figure minus max_memory_reserved was 758-774 MiB
#: at the peak of twelve training steps on an H200 (torch 2.11, CUDA 13.0, driver 580; 610 MiB before the first
#: GEMM). Part of it is local memory reserved per resident thread (SMs x 2048 threads x 1 KiB of stack: 264 MiB on
#: 132 SMs); which share is the newer CUDA's kernel images rather than the chip, one machine cannot tell.
CUDA_CONTEXT_TORCH_HOPPER = 760 * MIB

#: vLLM "non-torch memory" at start-up on one GPU (CUDA context, cuBLAS/NCCL handles, custom all-reduce
#: buffers are extra with TP): vLLM's own profiling log prints it; 1.2-1.8 GiB is typical for dense models
#: with CUDA graphs captured (vllm-project/vllm PR 10511 logs; llm-d capacity planner constants).
VLLM_NON_TORCH = 1536 * MIB
#: extra per GPU when tensor parallel (NCCL communicators and custom all-reduce buffers)
VLLM_NON_TORCH_TP_EXTRA = 1024 * MIB
#: CUDA-graph capture pool (V1 captures up to 512 batch sizes, most of it shared); counted in reserved
VLLM_CUDA_GRAPHS = 512 * MIB

#: llama.cpp: CUDA context + cuBLAS handle of a ggml-cuda process
LLAMACPP_CONTEXT = 350 * MIB
#: ggml's CUDA backend runs a matrix product whose weight sits in host memory on the GPU when the batch has at least
#: this many tokens (``ggml_backend_cuda_device_offload_op``: ``get_op_batch_size(op) >= 32``, GET_ROWS excluded): the
#: scheduler copies the weight into the GPU's compute buffer for it (partial offload, 0 GPU layers, experts on the CPU)
GGML_OFFLOAD_MIN_BATCH = 32

#: PyTorch caching allocator: requests >= 1 MiB are rounded to 2 MiB, and blocks live in segments of at
#: least 20 MiB (c10/cuda/CUDACachingAllocator.cpp: kRoundLarge, kLargeBuffer, kMinLargeAlloc).
ALLOC_ROUND_LARGE = 2 * MIB
ALLOC_SMALL_SEGMENT = 2 * MIB
ALLOC_LARGE_SEGMENT = 20 * MIB

#: bytes per (head x s^2) element of the one-layer eager-attention transient in transformers inference
#: (bf16 scores, mask add, fp32 softmax and the bf16 cast overlap); measured by the tensor-level trace in
#: shared/research/trace-oracle.md §3 (10.3 B).
EAGER_SCORES_BYTES = 10.3
#: the same for gpt-oss, whose eager_attention_forward (transformers 5.24 modeling_gpt_oss.py) keeps the softmax in
#: the logits' 16-bit dtype: at the softmax the masked scores, the sink-concatenated logits less their max and the
#: probabilities are alive, 3 x 2 B (read from the code, not measured)
EAGER_SCORES_BYTES_SINKS = 6.0
#: what gpt-oss's eager attention keeps for backward per score: the softmax output (2 B; the matmul with V saves a
#: view of it; the max, the subtraction, the concatenation and the mask add keep nothing of that size)
EAGER_SAVED_BYTES_SINKS = 2.0

#: default headroom of the fit verdict: what a desktop keeps for the display server and what allocator
#: spikes need. "tight" when the estimate is within this margin.
FIT_HEADROOM_FRACTION = 0.05
FIT_HEADROOM_MIN = 256 * MIB

#: training: max_memory_reserved - max_memory_allocated, from replaying 23 traced Hugging Face training steps
#: (benchmarks/data/traces: Mistral / Llama-2 / Yi / Qwen2.5 / SantaCoder / Mixtral; LoRA and full; with and without
#: checkpointing; 2k-32k tokens) through a model of PyTorch's caching allocator (benchmarks/allocator); nine steps
#: traced later (GPTQ LoRA, AMP, DoRA, SGD, Adafactor, modules_to_save) keep these constants within 6 % at p90 and
#: refit to the same values. The free blocks the allocator cannot reuse at the peak scale with the loss head's
#: tensors (the largest of the step) and
#: with one layer's activations (what each layer frees and the next one cannot fit into once checkpoints are carved
#: out of it). Least-squares fit (benchmarks/allocator/fit_reserve.py): slack = a x loss head + b x one layer's
#: activations; full fine-tuning frees more (gradients are allocated between the activations) and has its own pair.
#: The simulated slack is erratic (SantaCoder: 3.6 GiB at batch 4, 1.2 GiB at batch 8), so the rule is good to
#: about 10 % of the reserved peak (leave-one-out p90); the rule it replaces (10 % of the activations) was 17 %.
TRAIN_RESERVE_LOSS_HEAD = {"adapters": 0.23, "full": 0.32}
TRAIN_RESERVE_LAYER = {"adapters": 0.46, "full": 1.74}
#: the same with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: segments grow in place, and what stays cached
#: follows the loss head (least squares over the same replays; fit_reserve.py prints it and its error)
TRAIN_RESERVE_EXPANDABLE_LOSS_HEAD = 0.20
#: adapters trained on unpacked batches of varying length: each new length leaves blocks of the old sizes in the
#: cache. Replays of 48-step LoRA runs (Mistral-7B, Llama-2-7B, Yi-6B, Qwen2.5-1.5B; lengths from a lognormal with
#: a chat dataset's mean 3234 / sd 2548 tokens, cut at 2k / 4k / 8k) keep a cache of k x the loss head at the
#: longest batch, k = 0.4-0.8 at mean/max 0.87, 1.1-1.3 at 0.67, 2.6-3.0 at 0.40: k = 1.6 x max/mean - 1.2.
#: Their smallest workable capacity stays within 2 GiB of the allocated peak (the cache is given back first).
TRAIN_RESERVE_VARYING = (1.6, 1.2)
#: NCCL communicator buffers per process (NVIDIA/nccl#964: 0.5-1.6 GiB); 768 MiB used
NCCL_PER_PROCESS = 768 * MIB
# where each constant comes from, as the estimate lists them (message ids "config.source.*": constants no config
# file carries)
SOURCES_TRAINING = text(
    "config.source.training_reserve",
    "reserved = allocated + a x loss head + b x one layer's activations (LoRA 0.23 / 0.46, full 0.32 / 1.74), fitted "
    "to traced training steps replayed through a model of PyTorch's caching allocator",
)
SOURCES_TRAINING_EXPANDABLE = text(
    "config.source.training_reserve_expandable",
    "reserved = allocated + 0.20 x loss head with expandable_segments:True, fitted to traced training steps "
    "replayed through a model of PyTorch's caching allocator",
)

#: (plain ``str`` values to the type checker: the estimate adds its own sentences beside them)
SOURCES: dict[str, str] = {
    "cuBLAS workspace": text(
        "config.source.cublas_workspace",
        "PyTorch default CUBLAS_WORKSPACE_CONFIG (:4096:2:16:8, sm90+: :4096:8:16:8), allocated by the caching "
        "allocator",
    ),
    "CUDA context": text(
        "config.source.cuda_context",
        "0.3-0.8 GiB per process with lazy module loading; 500 MiB used, 760 MiB on sm90+ (measured on an H200, "
        "torch 2.11 / CUDA 13.0)",
    ),
    "allocator rounding": text(
        "config.source.allocator_rounding", "CUDACachingAllocator: >=1 MiB requests rounded to 2 MiB; 20 MiB segments"
    ),
    "vLLM non-torch": text(
        "config.source.vllm_non_torch", "vLLM start-up profiling logs (PR 10511): ~1.8 GiB at TP=1 with CUDA graphs"
    ),
    "eager attention": text(
        "config.source.eager_attention",
        "10.3 B per head x s^2 element, tensor-level trace of transformers (trace-oracle §3)",
    ),
}

#: vLLM's MXFP4 MoE (gpt-oss): the expert kernel vLLM picks (vllm/model_executor/layers/quantization/mxfp4.py,
#: get_mxfp4_backend) and how Mxfp4MoEMethod.create_weights pads the per-rank intermediate size and the hidden size
#: for it, as (intermediate multiple, hidden multiple). Hopper (sm90) runs the triton_kernels backend (FlashInfer's
#: SM90 backend is opt-in: VLLM_USE_FLASHINFER_MOE_MXFP4_BF16), pads the intermediate to 64 and then lays the weights
#: out for Hopper's MMA (below); Blackwell datacenter parts (sm100 family) run FlashInfer's BF16 backend (256 / 256);
#: every other CUDA GPU (Ampere, Ada, consumer Blackwell sm120: triton_kernels needs 9.0 <= capability < 11.0) runs
#: Marlin, whose MoE kernel needs n % 256 and k % 128 (128 / 256); ROCm pads both to 128 (get_padding_alignment;
#: 256 on gfx950, MI350 / MI355).
VLLM_MXFP4_PAD = {"triton": (64, 1), "flashinfer": (256, 256), "marlin": (128, 256), "rocm": (128, 128)}
VLLM_MXFP4_PAD_GFX950 = 256
#: triton_kernels' Hopper layouts (python/triton_kernels/triton_kernels/tensor_details/layout_details/: hopper_value.py
#: HopperMXValueLayoutTransformation._padded_shape, hopper_scale.py HopperMXScaleLayoutTransformation.swizzle_data), as
#: vLLM's _swizzle_mxfp4 (quantization/utils/mxfp4_utils.py) applies them with the MX axis on the input features: the
#: packed weight bytes are padded to 64 along the input (2 values a byte) and to 256 along the output features; the
#: E8M0 scales to 2 x num_warps x 2 x 8 rows (num_warps 8: 256) along the output and to 2 along the input blocks.
#: The expert biases become fp32 (Mxfp4MoEMethod.process_weights_after_loading, Triton branch).
VLLM_TRITON_HOPPER_VALUE_ALIGN = (64, 256)
VLLM_TRITON_HOPPER_SCALE_ALIGN = (2 * 8 * 2 * 8, 2)
#: the fused-MoE modular kernel runs at most this many tokens through the experts at once
#: (vllm/envs.py VLLM_FUSED_MOE_CHUNK_SIZE, default 16 * 1024)
VLLM_FUSED_MOE_CHUNK = 16 * 1024
