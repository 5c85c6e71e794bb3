"""`vramdesk compare A B C -o OUT` in all seven formats (the format from --format or OUT's suffix), each opened back;
the pictures and the HTML chart are rendered in a child process, so the command line itself never imports Qt."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from samples import named_plan

from vramdesk import cli
from vramdesk.storage.scenarios import save_scenario

NAMES = ("bf16", "int4", "batch 8")


def run_cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(args), out=out), out.getvalue()


plan = named_plan


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    paths = [tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.vramdesk.json"]
    for path, s in zip(paths, (plan("bf16"), plan("int4", weights="int4"), plan("batch 8", batch=8)), strict=True):
        save_scenario(s, path)
    return [str(p) for p in paths]


def test_compare_writes_every_format_named_by_the_suffix(files: list[str], tmp_path: Path) -> None:
    out = {fmt: tmp_path / f"cmp.{fmt}" for fmt in ("png", "svg", "pdf", "html", "md", "csv", "json")}
    for fmt, path in out.items():
        code, printed = run_cli("compare", *files, "-o", str(path))
        assert code == 0 and printed == "" and path.stat().st_size > 100, fmt
    assert out["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    texts = ["".join(e.itertext()).replace("\xa0", " ") for e in ET.parse(out["svg"]).getroot().iter()]
    assert "Comparison of 3 plans" in texts and all(n in texts for n in NAMES)
    pdf = out["pdf"].read_bytes()
    assert pdf.startswith(b"%PDF-") and len(re.findall(rb"/Type\s*/Page(?![s\w])", pdf)) == 1
    page = out["html"].read_text(encoding="utf-8")
    assert page.count('<img src="data:image/png;base64,') == 1
    assert page.index("Fit on the GPU") < page.index("<img") < page.index("Totals (GiB)")
    md = out["md"].read_text(encoding="utf-8")
    assert md.startswith("# vramdesk comparison of 3 plans") and "| **Weights** | auto (checkpoint) | int4 |" in md
    rows = list(csv.DictReader(io.StringIO(out["csv"].read_text(encoding="utf-8"))))
    dev = next(r for r in rows if r["name"] == "on the device (per GPU)")
    assert int(dev["bf16"]) > int(dev["int4"]) and dev["unit"] == "bytes"
    doc = json.loads(out["json"].read_text(encoding="utf-8"))
    assert doc["columns"] == list(NAMES) and doc["rows"][0]["name"] == "GPU"


def test_format_unit_and_only_differences(files: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, md = run_cli("compare", *files, "--unit", "GB", "--only-differences")
    assert code == 0 and "## Totals (GB)" in md and "Model ID" not in md and "| **Batch** |" in md
    txt = tmp_path / "cmp.txt"  # a suffix that names no format: Markdown, as before
    assert run_cli("compare", *files, "-o", str(txt))[0] == 0 and txt.read_text().startswith("# vramdesk")
    code, _ = run_cli("compare", *files, "--format", "csv", "-o", str(tmp_path / "x.md"))
    assert code == 0 and (tmp_path / "x.md").read_text().startswith("section,group,name")
    assert run_cli("compare", *files, "--format", "png")[0] == 2
    assert "a png comparison is written to a file: give -o OUT.png" in capsys.readouterr().err
    assert run_cli("compare", *files, "-o", files[1].replace("b.json", "b.png"), "--format", "svg")[0] == 0
    assert run_cli("compare", *files, "-o", files[0])[0] == 2  # never over an input
    assert "the output would replace the input scenario" in capsys.readouterr().err


def test_html_to_stdout_has_the_chart(files: list[str]) -> None:
    code, page = run_cli("compare", *files[:2], "--format", "html")
    assert code == 0 and page.startswith("<!DOCTYPE html>") and "data:image/png;base64," in page


def test_the_command_line_process_never_imports_qt(files: list[str], tmp_path: Path) -> None:
    out = tmp_path / "cmp.png"
    code = (
        "import sys; from vramdesk import cli; "
        f"rc = cli.main(['compare', *{files!r}, '-o', {str(out)!r}]); "
        "assert rc == 0, rc; "
        "assert not {'PySide6', 'pyqtgraph'} & {m.split('.')[0] for m in sys.modules}, 'Qt imported'"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:4] == b"\x89PNG"
