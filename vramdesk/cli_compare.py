"""``vramdesk compare A.json B.json ...``: saved scenarios side by side (inputs, components, totals, verdicts)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

from vramdesk.cli_common import ERRORS, estimate_and_speed, read_scenario_file, write_or_print


def add_compare_parser(sub: Any) -> None:
    cmp = sub.add_parser("compare", help="side-by-side comparison of saved scenario files")
    cmp.add_argument("files", nargs="+", metavar="SCENARIO.json", help="two or more scenario files")
    cmp.add_argument("--format", choices=["md", "csv", "json"], default="md", help="[md]")
    cmp.add_argument("-o", "--output", metavar="OUT", default=None, help="write to a file instead of stdout")


def run_compare(ns: argparse.Namespace, out: TextIO) -> int:
    """`vramdesk compare A.json B.json ...`: inputs, components, totals and verdicts side by side."""
    from vramdesk.report.comparison import (
        CompareItem,
        build_comparison,
        comparison_csv,
        comparison_json,
        comparison_markdown,
    )
    from vramdesk.report.tables import json_text

    if len(ns.files) < 2:
        print("vramdesk: error: compare needs at least two scenario files", file=sys.stderr)
        return 2
    items: list[CompareItem] = []
    labels: dict[str, int] = {}
    try:
        if ns.output:  # say so before estimating anything
            from vramdesk.safety import check_output

            check_output(ns.output, ns.files)
        for f in ns.files:
            scenario = read_scenario_file(Path(f))
            label = scenario.name or Path(f).name.removesuffix(".json").removesuffix(".vramdesk")
            labels[label] = labels.get(label, 0) + 1
            if labels[label] > 1:
                label = f"{label} ({labels[label]})"
            try:
                est, perf = estimate_and_speed(scenario)
                items.append(CompareItem(label, scenario, est, perf))
            except ERRORS as err:
                items.append(CompareItem(label, scenario, error=str(err)))
        cmp = build_comparison(items)
        if ns.format == "json":
            text = json_text(comparison_json(cmp))
        elif ns.format == "csv":
            text = comparison_csv(cmp)
        else:
            text = comparison_markdown(cmp)
        write_or_print(text, ns.output, out, ns.files)
    except ERRORS as err:
        print(f"vramdesk: error: {err}", file=sys.stderr)
        return 2
    failed = [i for i in items if i.error]
    for i in failed:
        print(f"vramdesk: error: {i.label}: {i.error}", file=sys.stderr)
    return 1 if failed else 0
