"""The scenario a first start shows: a small, popular catalog model on a common GPU, with the command line's
defaults (the prompt: the model's context, at most 4,096 tokens; 512 generated)."""

from __future__ import annotations

from .scenario import Hardware, InferenceWorkload, ModelRef, Scenario

DEFAULT_SCENARIO = Scenario(
    name="Qwen3-4B on an RTX 4090",  # its generated name (core/plan_name.py): it follows the plan
    model=ModelRef(id="Qwen/Qwen3-4B"),
    weights="auto",
    workload=InferenceWorkload(engine="transformers", batch=1, input_len=None, output_len=512),
    hardware=Hardware(gpu="RTX 4090", gpu_count=1),
)
