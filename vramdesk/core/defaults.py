"""The scenario a first start shows: a small, popular catalog model on a common GPU."""

from __future__ import annotations

from .scenario import Hardware, InferenceWorkload, ModelRef, Scenario

DEFAULT_SCENARIO = Scenario(
    name="Qwen3-4B, BF16, 8k context on an RTX 4090",
    model=ModelRef(id="Qwen/Qwen3-4B"),
    weights="auto",
    workload=InferenceWorkload(engine="transformers", batch=1, input_len=7680, output_len=512),
    hardware=Hardware(gpu="RTX 4090", gpu_count=1),
)
