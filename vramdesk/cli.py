"""The command line (ARCHITECTURE.md §5). It uses core + services + storage + report, never the UI."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

from pydantic import ValidationError

from vramdesk import __version__
from vramdesk.core import engines, jsonsafe
from vramdesk.core.estimate import estimate
from vramdesk.core.gpu import GIB, GpuSpec
from vramdesk.core.options import Option, by_flag, options
from vramdesk.core.performance import PerformanceError, performance
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import Scenario
from vramdesk.report.json_report import estimate_to_dict
from vramdesk.report.tables import level_labels, runs
from vramdesk.services.deepspeed import apply_deepspeed, read_deepspeed
from vramdesk.services.resolve import resolve_gpu, resolve_model
from vramdesk.storage.scenarios import is_scenario_file, load_scenario, save_scenario
from vramdesk.validation_text import validation_text

from .cli_common import ERRORS, CliError, estimate_and_speed

#: options of the command line that are not scenario settings (the option table, core/options.py, has those)
_COMMAND_KEYS = frozenset({"mode", "deepspeed", "name", "model"})
#: every key a --jsonl line may hold
_ALL_KEYS = _COMMAND_KEYS | set(by_flag())
#: what the command line's help adds to an option's own help
_MORE_HELP = {
    "weights": "auto (the checkpoint's own), fp32, bf16, fp16, fp8, fp8-block, int8, nf4, nf4-dq, fp4, gptq-int4, "
    "gptq-int8, awq-int4, mxfp4, q8_0, q6_k, q5_k_m, q4_k_m, q4_0, ...",
    "gpu": "a GPU catalog name, e.g. 'RTX 4090', 'H100 SXM'",
}


def _checked(kind: Callable[[str], Any], expected: str, ok: Callable[[Any], bool], must: str) -> Callable[[str], Any]:
    """An argparse type: ``kind(text)`` ("expected <expected>" when it is not one), then ``ok`` ("<must>")."""

    def parse(text: str) -> Any:
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got '{text}'") from None
        if not ok(v):  # (NaN passes no bound)
            raise argparse.ArgumentTypeError(f"{must}, got {v}")
        return v

    return parse


_positive = _checked(int, "a whole number", lambda v: v >= 1, "must be at least 1")
_nonneg = _checked(int, "a whole number", lambda v: v >= 0, "must be 0 or more")
_dropout = _checked(float, "a probability in [0, 1)", lambda v: 0 <= v < 1, "must be in [0, 1)")
_fraction = _checked(float, "a number between 0 and 1", lambda v: 0 < v <= 1, "must be in (0, 1]")
_positive_float = _checked(float, "a number of GiB", lambda v: v > 0, "must be more than 0")
_nonneg_float = _checked(float, "a number of GiB", lambda v: v >= 0, "must be 0 or more")


#: most GPUs a solver tries (one GPU count at a time): a plan's own bound per machine (Hardware.gpu_count)
_MAX_SOLVER_GPUS = 4096


def _solver_gpus(text: str) -> int:
    v: int = _positive(text)
    if v > _MAX_SOLVER_GPUS:
        raise argparse.ArgumentTypeError(f"at most {_MAX_SOLVER_GPUS:,}, got {v:,}")
    return v


#: (kind, lower bound) -> the argparse type that checks it, with the command line's own messages; upper bounds
#: are the scenario's to check (its message names the field and the limit)
_NUMBER_TYPES: dict[tuple[str, str, float], Callable[[str], Any]] = {
    ("int", "ge", 1): _positive,
    ("int", "ge", 0): _nonneg,
    ("float", "gt", 0): _positive_float,
    ("float", "ge", 0): _nonneg_float,
}


def _number_type(opt: Option) -> Callable[[str], Any]:
    if opt.kind == "float" and opt.bounds.get("lt") == 1 and opt.bounds.get("ge") == 0:
        return _dropout
    if opt.kind == "float" and opt.bounds.get("le") == 1 and opt.bounds.get("gt") == 0:
        return _fraction
    for key in ("ge", "gt"):
        if key in opt.bounds:
            return _NUMBER_TYPES[(opt.kind, key, opt.bounds[key])]
    raise AssertionError(f"option '{opt.name}': no command-line type for its bounds {dict(opt.bounds)}")


def _add_option(p: argparse.ArgumentParser, opt: Option) -> None:
    """One scenario option as a long option: its type, choices and help from the option table."""
    extra = _MORE_HELP.get(opt.name)
    help_text = f"{opt.help}{'; ' + extra if extra else ''} [{opt.default_text()}]".replace("%", "%%")
    kwargs: dict[str, Any] = {"default": None, "help": help_text, "dest": opt.flag}
    if opt.kind == "bool":
        kwargs["action"] = argparse.BooleanOptionalAction
    elif opt.kind == "choice":
        kwargs["choices"] = list(opt.values)
        if all(isinstance(v, int) for v in opt.values):
            kwargs["type"] = int
    elif opt.kind in ("int", "float"):
        kwargs["type"] = _number_type(opt)
    p.add_argument(opt.cli, **kwargs)


def _add_estimate_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mode", choices=["inference", "finetune"], default=None, help="[inference]")
    p.add_argument(
        "--deepspeed",
        metavar="FILE",
        default=None,
        help="plan with the DeepSpeed JSON config the job will launch with (ZeRO stage, offload, precision, "
        "micro-batch, optimizer); options given here win",
    )
    for opt in options():
        _add_option(p, opt)
    p.add_argument("--name", default=None, help="a name for the saved scenario")


class _Parser(argparse.ArgumentParser):
    """argparse with the contract's error form: one line on stderr, exit status 2 (argparse prints the whole
    usage first, 40 lines for ``estimate``, which buried the line that says what is wrong)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="vramdesk", description="GPU memory estimates for LLM inference and fine-tuning.")
    parser.add_argument("--version", action="version", version=f"vramdesk {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    est = sub.add_parser(
        "estimate", help="estimate one scenario, inference or fine-tuning (--mode finetune), or many with --jsonl"
    )
    est.add_argument(
        "model",
        nargs="?",
        help="repo id (catalog, HF cache or Hub; owner/name:Q4_K_M for a GGUF repo), config.json, model folder, "
        ".gguf file, or scenario .json",
    )
    _add_estimate_options(est)
    out = est.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print one JSON object")
    out.add_argument("--jsonl", metavar="FILE", help="many scenarios: one JSON object per line ('-' = stdin)")
    est.add_argument(
        "--jobs",
        type=_nonneg,
        metavar="N",
        help="--jsonl: worker processes (1 = this process only) [0 = one per core for a file of many lines]",
    )
    est.add_argument("--save", metavar="S.json", help="also write the scenario file")
    est.add_argument(
        "--no-detect",
        action="store_true",
        help=f"without --gpu, give no verdict instead of judging against this machine's GPU 0 ({NO_DETECT_ENV}=1)",
    )
    srch = sub.add_parser("search", help="find models in the catalog, the local HF cache and the Hub")
    srch.add_argument("query", help="words of the model name, e.g. 'qwen 32b'")
    srch.add_argument("--limit", type=_positive, default=20, help="most results to show [20]")
    srch.add_argument("--json", action="store_true", help="print one JSON object")
    _add_solve_parser(sub)
    gpus = sub.add_parser("gpus", help="GPUs seen through NVML (an empty list and the reason when none)")
    gpus.add_argument("--json", action="store_true", help="print one JSON object")
    from vramdesk.cli_compare import add_compare_parser
    from vramdesk.cli_export import add_export_parser
    from vramdesk.cli_sweep import add_sweep_parser
    from vramdesk.cli_trace_args import add_trace_parser

    add_compare_parser(sub)
    add_export_parser(sub, _add_estimate_options)
    add_sweep_parser(sub, _add_estimate_options)
    add_trace_parser(sub, _add_estimate_options)
    return parser


def _options_dict(ns: argparse.Namespace) -> dict[str, Any]:
    return {k: v for k, v in vars(ns).items() if k in _ALL_KEYS and v is not None}


def _apply(base: dict[str, Any], opts: dict[str, Any]) -> dict[str, Any]:
    """Overlay long-option values on a scenario dict (the saved-file shape)."""
    data: dict[str, Any] = json.loads(json.dumps(base))
    mode = opts.get("mode") or data.get("workload", {}).get("kind", "inference")
    work = data.get("workload") or {}
    if work.get("kind", "inference") != mode:
        work = {}
    work["kind"] = mode
    data["workload"] = work
    table = by_flag()
    for key, value in opts.items():
        if key in ("mode", "model"):
            continue
        if key == "name":
            data["name"] = value
            continue
        opt = table.get(key)
        if opt is None:  # pragma: no cover - argparse and --jsonl accept only _ALL_KEYS
            raise CliError(f"unknown option '{key}'")
        if opt.mode not in (None, mode):
            raise CliError(f"{opt.cli} does not apply to --mode {mode}")
        listed = opt.kind == "list" and not isinstance(value, list)
        opt.put(data, [t.strip() for t in str(value).split(",") if t.strip()] if listed else value)
    return data


def scenario_from(model: str, opts: dict[str, Any]) -> Scenario:
    opts = dict(opts)
    ds_path = opts.pop("deepspeed", None)
    if model.endswith(".json") and Path(model).is_file() and is_scenario_file(Path(model)):
        base = load_scenario(Path(model)).model_dump(mode="json")
    else:
        base = {"model": {"id": model}}
    if ds_path:
        # the DeepSpeed file sets ZeRO, offload, precision, micro-batch...; options given explicitly still win
        if opts.get("mode") == "inference":
            raise CliError("--deepspeed describes a training job: it does not go with --mode inference")
        plan = read_deepspeed(Path(str(ds_path)))
        for note in plan.notes:
            print(f"vramdesk: note: {ds_path}: {note}", file=sys.stderr)
        base = apply_deepspeed(_validated(base), plan).model_dump(mode="json")
    return _validated(_apply(base, opts))


def _validated(data: dict[str, Any]) -> Scenario:
    try:
        return Scenario.model_validate(data)
    except ValidationError as err:
        raise CliError(f"invalid scenario: {validation_text(err)}") from err


def _save_file(scenario: Scenario, path: Path) -> None:
    """``--save PATH``: a file in the library folder is written as the library writes (under its lock, the
    content it replaces kept as a version), so a window saving the same configuration at once loses nothing;
    anywhere else the file is written (whole, atomically) as asked."""
    from vramdesk.safety import same_file
    from vramdesk.storage.library import SUFFIX, LibraryError, ScenarioLibrary

    library = ScenarioLibrary()
    if path.name.endswith(SUFFIX) and library.root.is_dir() and same_file(path.parent, library.root):
        try:
            library.put(path.name, scenario)
        except LibraryError as err:
            raise CliError(str(err)) from err
    else:
        save_scenario(scenario, path)


def run_estimate(scenario: Scenario) -> Estimate:
    facts = resolve_model(scenario.model.id)
    gpu = resolve_gpu(scenario.hardware.gpu)
    return estimate(scenario, facts, gpu)


def _gib(n: int) -> str:
    return f"{n / GIB:8.2f} GiB"


def render_text(est: Estimate, scenario: Scenario, out: TextIO) -> None:
    w = scenario.workload
    p = est.params
    out.write(f"{est.model_id}\n")
    out.write(f"  parameters: {p.total:,} total, {p.active:,} active")
    if p.trainable:
        out.write(f", {p.trainable:,} trainable")
    if p.checkpoint_total != p.total:
        out.write(f" (checkpoint stores {p.checkpoint_total:,})")
    out.write("\n")
    if w.kind == "inference":
        out.write(
            f"  {w.engine}, batch {w.batch}, input {w.input_len or 'default'}, output {w.output_len}, "
            f"weights {scenario.weights}, KV {w.kv_dtype}\n"
        )
    uneven = est.gpus_differ
    out.write(f"\nAt the peak ({est.peak_phase})" + (", GPU 0 (the GPUs differ; each below)" if uneven else "") + ":\n")
    for c in est.components:
        out.write(f"  {c.name:<28}{_gib(c.bytes)}\n")
    alloc_label, reserved_label = level_labels(est.engine.engine)
    out.write(f"  {'= peak allocated':<28}{_gib(est.peak_allocated_bytes)}   ({alloc_label})\n")
    out.write(f"  {'= peak reserved':<28}{_gib(est.peak_reserved_bytes)}   ({reserved_label})\n")
    for c in est.device_overheads:
        out.write(f"  {'+ ' + c.name:<28}{_gib(c.bytes)}\n")
    out.write(f"  {'= on the device':<28}{_gib(est.device_bytes)}   (nvidia-smi, per GPU)\n")
    if uneven:
        shares = est.per_gpu
        for a, b, device in runs([g.device_bytes for g in shares]):
            first, last = shares[a].index, shares[b].index
            name = f"GPU {first}" if first == last else f"GPU {first}-{last} (each)"
            out.write(f"  {name:<28}{_gib(device)}   on the device\n")
    if est.host_bytes:
        out.write(f"  {'host memory (per machine)':<28}{_gib(est.host_bytes)}\n")
    e = est.engine
    if e.kv_capacity_tokens is not None:
        out.write(
            f"\n  {engines.engine(e.engine).display_name} KV pool: {e.kv_capacity_tokens:,} tokens; up to "
            f"{e.max_concurrent_sequences} sequences "
            "of this length at once\n"
        )
    if est.fit:
        out.write(f"\n{est.fit.verdict.upper()} on {est.fit.gpu}: {est.fit.message}\n")
    for warning in est.warnings:
        out.write(f"warning: {warning}\n")
    for note in p.notes:
        out.write(f"note: {note}\n")


def _jsonl_result(line: bytes) -> dict[str, Any]:
    try:
        obj = jsonsafe.loads(line, source="")
    except jsonsafe.JsonError as bad:
        if bad.syntax:
            raise CliError(f"not a JSON object ({bad.syntax[0]} at column {bad.syntax[2]})") from bad
        raise CliError(f"not valid JSON ({bad.problem})") from bad
    if not isinstance(obj, dict):
        raise CliError("each line must be a JSON object")
    unknown = sorted(set(obj) - _ALL_KEYS)
    if unknown:
        raise CliError("unknown key(s): " + ", ".join(k[:80] for k in unknown))
    model = obj.get("model")
    if not isinstance(model, str) or not model:
        raise CliError('missing "model"')
    scenario = scenario_from(model, {k: v for k, v in obj.items() if v is not None})
    est, perf = estimate_and_speed(scenario)
    return estimate_to_dict(est, scenario, perf)


def _jsonl(path: str, out: TextIO, jobs: int = 0) -> int:
    """``--jsonl FILE``: one JSON result per non-blank line, in order (``cli_jsonl``: each line its own job)."""
    from vramdesk.cli_jsonl import run

    return run(path, out, _jsonl_result, jobs)


def _printable(text: object) -> str:
    """Text from the Hub or a mirror as a terminal shows it safely: control characters (an escape sequence that
    would recolour, retitle or clear the terminal, a carriage return that hides what came before) become '?'."""
    return "".join(ch if ch.isprintable() else "?" for ch in str(text))


def _search(ns: argparse.Namespace, out: TextIO) -> int:
    """`vramdesk search QUERY`: catalog + HF cache + Hub (HF_ENDPOINT honoured); a Hub failure is a note."""
    from vramdesk.services.search import search

    results, hub = search(ns.query, ns.limit)
    if ns.json:
        doc = {
            "query": ns.query,
            "results": [r.to_json() for r in results],
            "hub": {
                "ok": hub.error is None,
                "error": hub.error.kind if hub.error else None,
                "note": hub.note,
                "stale": hub.stale,
                "seconds": round(hub.seconds, 3),
            },
        }
        out.write(json.dumps(doc, indent=2) + "\n")
    else:
        for r in results:
            params = (
                f"{r.params / 1e9:8.2f} B"
                if r.params and r.params >= 10**9
                else f"{r.params / 1e6:8.1f} M"
                if r.params
                else " " * 10
            )
            downloads = f"{r.downloads:>12,}" if r.downloads is not None else " " * 12
            gated = " gated" if r.gated else ""
            line = f"[{r.source:<7}] {_printable(r.id):<52} {params} {downloads}  {_printable(r.detail)}{gated}"
            out.write(line + "\n")
        if not results:
            out.write(f"no models match '{ns.query}'\n")
    if hub.note:
        print(f"vramdesk: note: {_printable(hub.note)}", file=sys.stderr)
    return 0 if results else 1


def _gpus(ns: argparse.Namespace, out: TextIO) -> int:
    """``vramdesk gpus [--json]``: what NVML sees; exit 0 also when there is none (that is an answer)."""
    from vramdesk.services.nvml import catalog_name, detect_gpus

    found = detect_gpus()
    if ns.json:
        doc = found.to_json()
        for g, item in zip(found.gpus, doc["gpus"], strict=True):
            item["catalog_name"] = catalog_name(g.name)
        out.write(json.dumps(doc, indent=2) + "\n")
        return 0
    if not found.gpus:
        out.write(f"no NVIDIA GPU detected: {found.reason}\n")
        return 0
    for g in found.gpus:
        mig = "  MIG on" if g.mig else ""
        out.write(
            f"GPU {g.index}: {g.name}  total {g.total / GIB:.2f} GiB, free {g.free / GIB:.2f} GiB, "
            f"used {g.used / GIB:.2f} GiB{mig}  (catalog: {catalog_name(g.name) or 'unknown'})\n"
        )
        for p in g.processes:
            used = f"{p.used_bytes / GIB:.2f} GiB" if p.used_bytes is not None else "? GiB"
            out.write(f"    pid {p.pid} {p.name or '?'}: {used}\n")
    if found.reason:
        out.write(f"note: {found.reason}\n")
    return 0


# ---------------------------------------------------------------------------------------------- solve


def _add_solve_parser(sub: Any) -> None:
    sol = sub.add_parser(
        "solve", help="inverse questions: the largest value that fits, the fewest GPUs, what to change, which GPUs"
    )
    sol.add_argument("model", help="repo id, config.json, model folder, .gguf file, or scenario .json")
    _add_estimate_options(sol)
    what = sol.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--maximize",
        choices=["input-len", "batch", "seq-len", "micro-batch", "lora-rank"],
        help="the largest value that still fits --gpu (x --gpus)",
    )
    what.add_argument("--minimize", choices=["gpus"], help="the fewest GPUs of the --gpu type")
    what.add_argument("--changes", action="store_true", help="the cheapest changes that make it fit --gpu")
    what.add_argument("--advise", action="store_true", help="which catalog GPUs fit (and how many), with speeds")
    sol.add_argument("--allow-tight", action="store_true", help="count 'tight' (inside the headroom) as fitting")
    sol.add_argument(
        "--max-gpus", type=_solver_gpus, default=None, help="most GPUs to try [64; 8 for --changes/--advise]"
    )
    sol.add_argument("--json", action="store_true", help="print one JSON object")


def _solve(ns: argparse.Namespace, out: TextIO) -> int:
    """`vramdesk solve ...`: exact answers on the estimator (see vramdesk.core.solve)."""
    from vramdesk.core.advice import advise
    from vramdesk.core.solve import SolveError, maximize
    from vramdesk.core.solve_changes import smallest_changes
    from vramdesk.core.solve_gpus import minimize_gpus

    try:
        scenario = scenario_from(ns.model, _options_dict(ns))
        facts = resolve_model(scenario.model.id)
        doc: dict[str, Any] = {"model": facts.model_id}
        lines: list[str] = []
        if ns.advise:
            from vramdesk.services.catalog import default_catalog

            rows = advise(
                scenario, facts, default_catalog().gpus(), max_gpus=ns.max_gpus or 8, allow_tight=ns.allow_tight
            )
            doc["advice"] = [r.model_dump(mode="json") for r in rows]
            for r in rows:
                rate = r.decode_tokens_per_s or r.train_tokens_per_s
                unit = "tok/s" if r.decode_tokens_per_s else "train tok/s"
                lines.append(
                    f"{r.gpu:<26} "
                    + (f"{r.gpus} x  {r.verdict:<6} " if r.gpus else f"does not fit on {ns.max_gpus or 8} ")
                    + (f"{rate:10.1f} {unit}" if rate else "")
                )
        else:
            gpu = resolve_gpu(scenario.hardware.gpu)
            if gpu is None:
                raise CliError("solve needs --gpu NAME (a catalog GPU), except with --advise")
            if ns.maximize:
                res = maximize(scenario, facts, gpu, ns.maximize, allow_tight=ns.allow_tight)
                doc.update(res.model_dump(mode="json"))
                lines.append(res.message)
                if res.value is not None:
                    solved = _set_field(scenario, res.field, res.value)
                    est = estimate(solved, facts, gpu)
                    try:
                        doc["performance"] = performance(est, solved, facts, gpu).model_dump(mode="json")
                    except PerformanceError:
                        doc["performance"] = None
            elif ns.minimize:
                g = minimize_gpus(scenario, facts, gpu, max_gpus=ns.max_gpus or 64, allow_tight=ns.allow_tight)
                doc.update(g.model_dump(mode="json"))
                lines.append(g.message)
            else:
                ch = smallest_changes(scenario, facts, gpu, max_gpus=ns.max_gpus or 8, allow_tight=ns.allow_tight)
                doc.update(ch.model_dump(mode="json"))
                lines.append(f"now: {ch.current_verdict} on {scenario.hardware.gpu_count} x {gpu.name}")
                group = None
                for o in ch.options:
                    if (o.more_gpus > 0) is not group:
                        group = o.more_gpus > 0
                        lines.append(
                            "with more GPUs:" if group else f"on your {scenario.hardware.gpu_count} x {gpu.name}:"
                        )
                    speed = f"{o.tokens_per_s:9.1f} tok/s" if o.tokens_per_s else "speed unknown  "
                    lines.append(
                        f"  cost {o.cost:5.1f}  {o.verdict:<5} {o.device_bytes / GIB:7.2f} GiB {speed}  {o.summary}"
                    )
                if not ch.options and ch.current_verdict in (("fits", "tight") if ns.allow_tight else ("fits",)):
                    lines.append("  it fits as it is: no change needed")
                elif not ch.options:
                    lines.append("  no change found that fits (up to three edits, or more GPUs up to --max-gpus)")
                lines.append(f"ranking: {ch.ranking}")
                lines.append(f"({ch.tried} configurations estimated; {ch.rule})")
    except (*ERRORS, SolveError, PerformanceError) as err:
        print(f"vramdesk: error: {err}", file=sys.stderr)
        return 2
    if ns.json:
        out.write(json.dumps(doc, indent=2) + "\n")
    else:
        out.write("\n".join(lines) + "\n")
    return 0


def _set_field(scenario: Scenario, field: str, value: int) -> Scenario:
    data = scenario.model_dump(mode="json")
    data["workload"][field] = value
    return Scenario.model_validate(data)


#: set (to anything) to keep ``estimate`` without ``--gpu`` from probing NVML (as ``--no-detect``)
NO_DETECT_ENV = "VRAMDESK_NO_DETECT"


def detected_gpu() -> GpuSpec | None:
    """``estimate`` without ``--gpu``: GPU 0 of this machine with its free memory, as the window plans (a note on
    stderr says so); None without a GPU, or with ``VRAMDESK_NO_DETECT`` set."""
    if os.environ.get(NO_DETECT_ENV):
        return None
    from vramdesk.services.nvml import machine_gpu

    spec, note = machine_gpu()
    if note:
        print(f"vramdesk: note: {note}; --gpu NAME to plan for another, --no-detect for no verdict", file=sys.stderr)
    return spec


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    parser = build_parser()
    ns = parser.parse_args(list(argv) if argv is not None else None)
    if ns.command is None:
        parser.print_help(out)
        return 0
    if ns.command == "gpus":
        return _gpus(ns, out)
    if ns.command == "search":
        return _search(ns, out)
    if ns.command == "solve":
        return _solve(ns, out)
    if ns.command == "compare":
        from vramdesk.cli_compare import run_compare

        return run_compare(ns, out)
    if ns.command == "export":
        from vramdesk.cli_export import run_export

        return run_export(ns, scenario_from, _options_dict(ns))
    if ns.command == "sweep":
        from vramdesk.cli_sweep import run_sweep

        return run_sweep(ns, out, scenario_from, _options_dict(ns))
    if ns.command == "trace":
        from vramdesk.cli_trace import run_trace

        return run_trace(ns, out, scenario_from, _options_dict(ns))
    try:
        if ns.jsonl:
            if ns.model:
                raise CliError("give either MODEL or --jsonl FILE, not both")
            return _jsonl(ns.jsonl, out, 0 if ns.jobs is None else ns.jobs)
        if ns.jobs is not None:
            raise CliError("--jobs goes with --jsonl FILE (it sets how many processes estimate the lines)")
        if not ns.model:
            raise CliError("estimate needs a MODEL (repo id, config.json, folder or scenario .json) or --jsonl FILE")
        scenario = scenario_from(ns.model, _options_dict(ns))
        here = None if scenario.hardware.gpu or ns.no_detect else detected_gpu()
        est, perf = estimate_and_speed(scenario, here)
        if ns.save:
            _save_file(scenario, Path(ns.save))
        if ns.json:
            out.write(json.dumps(estimate_to_dict(est, scenario, perf), indent=2) + "\n")
        else:
            render_text(est, scenario, out)
        return 0
    except ERRORS as err:
        print(f"vramdesk: error: {' '.join(str(err).split())}", file=sys.stderr)  # one line, whatever it quotes
        return 2
