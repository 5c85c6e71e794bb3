"""What FSDP's mixed precision does to saved activations, checked on the CPU (needs torch, transformers, peft).

The estimator treats AMP under FSDP as 16-bit compute on 16-bit parameters: no autocast copies of fp32 weights, a
16-bit residual stream, and LoRA adapters that compute in 16 bits (accelerate gives FSDP a MixedPrecision policy
whenever the Trainer runs in bf16/fp16, and that policy casts the adapters' units too). This script measures the
bytes autograd saves for backward in one training step of a small Llama on two gloo ranks with FSDP2's
``fully_shard`` (FSDP1 needs an accelerator; its MixedPrecision casts the same way):

    python benchmarks/allocator/fsdp_mixed_precision.py

Run on 2026-11-30 (torch 2.13 CPU, transformers 5.24, peft 0.21; hidden 256, 4 layers, 256 tokens):

    full, AMP + FSDP mixed precision     17.59 MiB   (pure bf16 + FSDP: 17.26; the rest is the fp32 loss head)
    full, AMP without FSDP               22.16 MiB   (autocast's weight copies, fp32 residual stream)
    LoRA, AMP + FSDP mixed precision     16.11 MiB
    LoRA, bf16 base, fp32 adapters, FSDP 23.06 MiB   (no policy: fp32 copies of every adapted input)
"""

from __future__ import annotations

import os
import sys
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from transformers import LlamaConfig, LlamaForCausalLM

CASES = ("full-amp-fsdp", "full-bf16-fsdp", "full-amp-plain", "lora-amp-fsdp", "lora-bf16-fsdp")


def saved_bytes(model: Any, ids: torch.Tensor, amp: bool) -> int:
    """Bytes of the distinct tensors autograd saves in one forward (then runs the backward)."""
    seen: set[int] = set()
    total = 0

    def pack(t: torch.Tensor) -> torch.Tensor:
        nonlocal total
        if t.data_ptr() not in seen:
            seen.add(t.data_ptr())
            total += t.numel() * t.element_size()
        return t

    with (
        torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t),
        torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp),
    ):
        out = model(input_ids=ids, labels=ids)
    out.loss.backward()
    return total


def build(case: str, world: int) -> tuple[Any, bool]:
    cfg = LlamaConfig(
        hidden_size=256,
        intermediate_size=688,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=4,
        vocab_size=1000,
        max_position_embeddings=512,
    )
    cfg._attn_implementation = "sdpa"
    amp = "-amp-" in case
    model = LlamaForCausalLM(cfg).float() if amp else LlamaForCausalLM(cfg).to(torch.bfloat16)
    base = model
    if case.startswith("lora"):
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=8, target_modules="all-linear", lora_dropout=0.0))
        for name, p in model.named_parameters():
            if "lora_" in name:
                p.data = p.data.float()  # fp32 adapters, as peft's autocast_adapter_dtype makes them
        base = model.base_model.model
    if case.endswith("fsdp"):
        mesh = init_device_mesh("cpu", (world,))
        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16) if amp else None
        kw = {"mesh": mesh, "mp_policy": policy} if policy else {"mesh": mesh}
        for layer in base.model.layers:
            fully_shard(layer, **kw)
        fully_shard(base, **kw)
    return model, amp


def run(rank: int, world: int, case: str, queue: Any) -> None:
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model, amp = build(case, world)
    result = saved_bytes(model, torch.randint(0, 1000, (1, 256)), amp)
    if rank == 0:
        queue.put(result)
    dist.destroy_process_group()


def main(cases: list[str]) -> None:
    ctx = mp.get_context("spawn")
    for case in cases:
        queue = ctx.Queue()
        world = 1 if case.endswith("plain") else 2
        procs = [ctx.Process(target=run, args=(r, world, case, queue)) for r in range(world)]
        for p in procs:
            p.start()
        result = queue.get()
        for p in procs:
            p.join()
        print(f"{case:16s} saved {result / 2**20:8.2f} MiB")


if __name__ == "__main__":
    main(sys.argv[1:] or list(CASES))
