"""The ``trace`` command's options (kept apart from :mod:`vramdesk.cli_trace`, which imports the tracing services:
building the parser for any command stays cheap)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

from vramdesk.tracing import DECODE_STEPS, TIMEOUT_S


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got '{text}'") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value


def add_trace_parser(sub: Any, estimate_options: Callable[[argparse.ArgumentParser], None]) -> None:
    """The ``trace`` command; ``estimate_options`` adds the options ``estimate`` takes (the option table's)."""
    tp = sub.add_parser(
        "trace",
        help="run the plan's real transformers / peft code on fake tensors in your Python and compare",
        description="Builds the model from its config (transformers' own classes, never trust_remote_code; no "
        "weights) inside FakeTensorMode in the Python you name, runs one inference request (prefill + a few "
        "decode steps) or one training step, replays its allocations through vramdesk's model of PyTorch's "
        "CUDA caching allocator and prints the peaks per phase next to the estimate. vramdesk installs nothing "
        "there: that environment needs torch, transformers and peft.",
    )
    tp.add_argument("model", help="repo id, config.json, model folder, or scenario .json")
    tp.add_argument("--python", required=True, metavar="PATH", help="the Python of an environment with torch")
    tp.add_argument(
        "--decode-steps",
        type=int,
        default=None,
        metavar="N",
        help=f"decode steps to trace [{DECODE_STEPS}, at most --output-len]",
    )
    tp.add_argument("--timeout", type=_seconds, default=TIMEOUT_S, metavar="S", help="seconds before it stops")
    tp.add_argument("--json", action="store_true", help="print one JSON object")
    tp.add_argument("-o", "--output", metavar="FILE.json", default=None, help="also write the measurement file")
    estimate_options(tp)
