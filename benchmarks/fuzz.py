"""The long fuzz run of tests/test_fuzz_inputs.py: thousands of broken inputs, counted by outcome.

    .venv/bin/python benchmarks/fuzz.py                      # 10,000 configs, 3,000 option sets, 1,000 of the rest
    .venv/bin/python benchmarks/fuzz.py --scale 0.1 --seed 7 # a quick run

Every case runs under a per-case timeout (a hang) and the whole run under an address-space cap (a runaway
allocation is a MemoryError, counted as a hang, instead of the kernel's OOM killer). Prints, per input kind, the
cases, answers, refusals, tracebacks (an exception that escaped, or a broken contract: exit status, more than
one line), hangs and absurd results, then the first findings and the peak RSS. Exits 1 on any traceback, hang
or absurd result.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # no network: unknown models are refused from the catalog and cache
_TMP = Path(tempfile.mkdtemp(prefix="vramdesk-fuzz-"))
os.environ.setdefault("VRAMDESK_CACHE_DIR", str(_TMP / "cache"))
os.environ.setdefault("VRAMDESK_DATA_DIR", str(_TMP / "data"))
os.environ.setdefault("HF_HUB_CACHE", str(_TMP / "hf"))

import fuzzinputs as fz  # noqa: E402
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import seed as hypothesis_seed  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


class Hang(BaseException):
    """A case past its time (BaseException: code under test that catches Exception does not swallow it)."""


def _alarm(signum: int, frame: Any) -> None:
    signal.setitimer(signal.ITIMER_REAL, 1.0)  # again in a second, should this land where it is ignored (a gc hook)
    raise Hang


def _targets(scale: float) -> list[tuple[str, int, st.SearchStrategy[Any], Any]]:
    def n(count: int) -> int:
        return max(1, int(count * scale))

    config_file = _TMP / "model" / "config.json"
    config_file.parent.mkdir(parents=True, exist_ok=True)

    def cli_on_file(case: tuple[dict[str, Any], list[str]]) -> str:
        import json

        config_file.write_text(json.dumps(case[0]))
        return str(fz.check_cli(case[1]))

    return [
        ("config.json dicts", n(10_000), fz.mutated_configs(), fz.check_config),
        ("option sets", n(3_000), fz.estimate_argv(nodes=["1", "2", "8", "16", "64", "4096"]), fz.check_cli),
        (
            "config.json files + options",
            n(1_000),
            st.tuples(fz.mutated_configs(), fz.estimate_argv(model=str(config_file))),
            cli_on_file,
        ),
        ("JSON bytes", n(1_000), fz.json_bytes(), fz.check_json),
        ("scenario files", n(1_000), fz.scenario_files(), lambda d: fz.check_scenario_file(_TMP / "s.json", d)),
        ("safetensors headers", n(1_000), fz.safetensors_files(), lambda c: fz.check_safetensors(*c)),
        ("GGUF headers", n(1_000), fz.gguf_files(), fz.check_gguf),
        ("--jsonl batches", n(500), fz.jsonl_batches(), lambda lines: fz.check_jsonl(_TMP / "b.jsonl", lines)),
    ]


def _case(
    strategy: st.SearchStrategy[Any],
    check: Any,
    name: str,
    counts: Counter[str],
    findings: list[tuple[str, str, str]],
    timeout: float,
    seed: int,
) -> Any:
    """A hypothesis test that runs ``check`` on each generated value and counts the outcome (it never fails, so
    hypothesis never shrinks: the counts are of distinct generated cases)."""

    @hypothesis_seed(seed)
    @settings(
        max_examples=counts["_max"],
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def case(value: Any) -> None:
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            counts[check(value)] += 1
        except (Hang, MemoryError):
            counts["hangs"] += 1
            findings.append((name, "hang", repr(value)[:300]))
        except fz.AbsurdError as err:
            counts["absurd"] += 1
            findings.append((name, "absurd", f"{err}: {repr(value)[:300]}"))
        except Exception:
            counts["tracebacks"] += 1
            findings.append((name, "traceback", f"{traceback.format_exc(limit=-3)}{repr(value)[:300]}"))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    return case


def run(scale: float, seed: int, timeout: float) -> int:
    signal.signal(signal.SIGALRM, _alarm)
    findings: list[tuple[str, str, str]] = []
    bad = 0
    print(f"{'input':<28}{'cases':>7}{'ok':>7}{'refused':>9}{'tracebacks':>12}{'hangs':>7}{'absurd':>8}{'s':>7}")
    for name, count, strategy, check in _targets(scale):
        counts: Counter[str] = Counter(_max=count)
        start = time.perf_counter()

        _case(strategy, check, name, counts, findings, timeout, seed)()
        del counts["_max"]
        total = sum(counts.values())
        bad += counts["tracebacks"] + counts["hangs"] + counts["absurd"]
        print(
            f"{name:<28}{total:>7}{counts['ok']:>7}{counts['refused']:>9}{counts['tracebacks']:>12}"
            f"{counts['hangs']:>7}{counts['absurd']:>8}{time.perf_counter() - start:>7.1f}",
            flush=True,
        )
    for name, kind, text in findings[:10]:
        print(f"\n--- {kind} in {name}:\n{text}")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nmax RSS {rss:.0f} MiB; {len(findings)} finding(s)")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every case count [1]")
    ap.add_argument("--seed", type=int, default=18, help="random seed [18]")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds one case may take (a hang) [10]")
    ap.add_argument("--memory-gib", type=float, default=4.0, help="address-space cap of the run [4]")
    ns = ap.parse_args()
    cap = int(ns.memory_gib * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    return run(ns.scale, ns.seed, ns.timeout)


if __name__ == "__main__":
    raise SystemExit(main())
