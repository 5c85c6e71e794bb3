"""Tracing a plan's real transformers / PEFT code: the child script run by the user's own Python (``child``, which
imports only the standard library, torch, transformers and peft) and the pure-Python model of PyTorch's CUDA
caching allocator its allocation stream is replayed through (``alloc_rules``, ``allocator``, ``replay``). Nothing
here imports the rest of vramdesk, so the child can load from the package folder in an environment without it."""

#: decode steps a trace runs unless asked otherwise (the child's docstring says why a few are enough)
DECODE_STEPS = 4
#: seconds a trace may take before it is stopped
TIMEOUT_S = 1800.0
