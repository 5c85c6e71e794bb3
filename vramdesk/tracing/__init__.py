"""Tracing a plan's real transformers / PEFT code: the child script run by the user's own Python (``child``, which
imports only the standard library, torch, transformers and peft) and the pure-Python model of PyTorch's CUDA
caching allocator its allocation stream is replayed through (``alloc_rules``, ``allocator``, ``replay``). Nothing
here imports the rest of vramdesk, so the child can load from the package folder in an environment without it."""
