"""Decode speed: the performance model against tokens/s that users published for the same GPU, model and
quantisation. Prints estimate / report per row; ``tests/core/test_performance.py`` asserts each row is within
``TOLERANCE``.

Only rows with a citable source are here (repository + file at a commit, or an issue URL). Llama 3 8B and
Llama 3.1 8B have the same shapes (32 layers, hidden 4096, GQA 8, vocab 128,256), so both are estimated with
the catalog's ``meta-llama/Llama-3.1-8B``. llama-bench ``tg512`` generates 512 tokens after an empty prompt.

The efficiencies in ``vramdesk.core.performance.Efficiency`` (0.8 of spec bandwidth for 16-bit weights, 0.65
for block-quantised GGUF) are round figures chosen from these llama.cpp reports, so this table is a check of the
spread across GPUs and formats, not an independent validation of the constants.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from vramdesk.core.estimate import estimate
from vramdesk.core.performance import performance
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import Catalog, default_catalog

#: estimate / report must lie in [1 - TOLERANCE, 1 + TOLERANCE]
TOLERANCE = 0.2

_XD = (
    "XiongjieDai/GPU-Benchmarks-on-LLM-Inference README.md @ 00dd2bdeb2404263f22bd6c1cd46ce397e341db5, "
    "'LLaMA 3 / NVIDIA GPUs' table (llama.cpp llama-bench, RunPod, May 2024), column tg 512"
)


@dataclass(frozen=True)
class SpeedReport:
    source: str
    gpu: str
    model: str
    reported_model: str
    weights: str
    engine: str
    tokens_per_s: float
    input_len: int = 1
    output_len: int = 512


REPORTS: tuple[SpeedReport, ...] = (
    SpeedReport(_XD, "RTX 4090", "meta-llama/Llama-3.1-8B", "Llama 3 8B", "q4_k_m", "llamacpp", 130.58),
    SpeedReport(_XD, "RTX 4090", "meta-llama/Llama-3.1-8B", "Llama 3 8B", "gguf-f16", "llamacpp", 54.84),
    SpeedReport(_XD, "RTX 3090", "meta-llama/Llama-3.1-8B", "Llama 3 8B", "q4_k_m", "llamacpp", 115.42),
    SpeedReport(_XD, "RTX 3090", "meta-llama/Llama-3.1-8B", "Llama 3 8B", "gguf-f16", "llamacpp", 47.40),
    SpeedReport(_XD, "RTX 4080", "meta-llama/Llama-3.1-8B", "Llama 3 8B", "q4_k_m", "llamacpp", 108.15),
    SpeedReport(_XD, "RTX 4080", "meta-llama/Llama-3.1-8B", "Llama 3 8B", "gguf-f16", "llamacpp", 40.58),
    SpeedReport(_XD, "RTX 3080", "meta-llama/Llama-3.1-8B", "Llama 3 8B", "q4_k_m", "llamacpp", 109.57),
    SpeedReport(
        "https://github.com/dmatora/LLM-inference-speed-benchmarks/issues/12 (llama.cpp build 93bc3839, "
        "'Token generation: 111.95 ± 2.45')",
        "RTX 3080",
        "meta-llama/Llama-3.1-8B",
        "Llama 3.1 8B",
        "q4_k_m",
        "llamacpp",
        111.95,
        input_len=1,
        output_len=128,
    ),
    SpeedReport(
        "https://github.com/dmatora/LLM-inference-speed-benchmarks/issues/10 (llama.cpp server, "
        "'Generation speed : 93 tokens per second'; 'Q6' read as Q6_K)",
        "RTX 4090",
        "meta-llama/Llama-3.1-8B",
        "Llama 3 8B",
        "q6_k",
        "llamacpp",
        93.0,
        input_len=512,
        output_len=512,
    ),
)


def estimated_tokens_per_s(row: SpeedReport, catalog: Catalog | None = None) -> float:
    cat = catalog or default_catalog()
    scenario = Scenario.model_validate(
        {
            "model": {"id": row.model},
            "weights": row.weights,
            "workload": {
                "kind": "inference",
                "engine": row.engine,
                "input_len": row.input_len,
                "output_len": row.output_len,
            },
            "hardware": {"gpu": row.gpu},
        }
    )
    facts = cat.facts(row.model)
    gpu = cat.gpu(row.gpu)
    perf = performance(estimate(scenario, facts, gpu), scenario, facts, gpu)
    assert perf.decode_tokens_per_s is not None
    return perf.decode_tokens_per_s


def main() -> int:
    worst = 0.0
    for row in REPORTS:
        est = estimated_tokens_per_s(row)
        ratio = est / row.tokens_per_s
        worst = max(worst, abs(ratio - 1))
        print(
            f"{row.gpu:<10} {row.reported_model:<13} {row.weights:<9} reported {row.tokens_per_s:7.2f}  "
            f"estimated {est:7.2f}  x{ratio:.2f}"
        )
    print(f"worst deviation {worst:.0%} (tolerance {TOLERANCE:.0%})")
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
