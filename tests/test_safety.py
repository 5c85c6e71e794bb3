"""Exports that cannot hurt: an output never replaces its own input, Markdown / HTML keep user and Hub text as
text, CSV / TSV cells never run as spreadsheet formulas, and Hub credentials never reach a message."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakehub import TINY_CONFIG, FakeHub, hub_environment

from vramdesk import cli
from vramdesk.cli import estimate_and_speed
from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.performance import Performance
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import Scenario
from vramdesk.report import comparison as rc
from vramdesk.report import tables as t
from vramdesk.safety import OutputIsInputError, check_output, redact, same_file
from vramdesk.services.hub import HubClient, HubError, display_endpoint, map_error
from vramdesk.services.resolve import ResolveError, resolve_model
from vramdesk.services.search import hub_results
from vramdesk.storage.scenarios import save_scenario

SCRIPT = "<script>alert(1)</script>"
LINK = "[click](javascript:alert(1))"
IMAGE = "![x](data:text/html;base64,PHNjcmlwdD4=)"
AUTOLINK = "<javascript:alert(2)>"
EVIL = f"{SCRIPT} {LINK} {IMAGE} {AUTOLINK} vbscript:msgbox | `code` & more\nnew line"


def run_cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(args), out=out), out.getvalue()


def named(name: str, **work: object) -> Scenario:
    data = DEFAULT_SCENARIO.model_dump()
    data["name"] = name
    data["workload"].update(work)
    return Scenario.model_validate(data)


Base = tuple[Scenario, Estimate, Performance | None]


@pytest.fixture(scope="module")
def base() -> Base:
    est, perf = estimate_and_speed(DEFAULT_SCENARIO)
    return DEFAULT_SCENARIO, est, perf


# ---------------------------------------------------------------------------------------------- output = input


@pytest.mark.parametrize("fmt", ["json", "md", "csv", "html", "png"])
def test_export_never_replaces_its_scenario(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    s = tmp_path / "s.json"
    save_scenario(DEFAULT_SCENARIO, s)
    before = s.read_bytes()
    monkeypatch.chdir(tmp_path)  # the path as typed: `vramdesk export s.json --format json -o s.json`
    assert run_cli("export", "s.json", "--format", fmt, "-o", "s.json")[0] == 2
    err = capsys.readouterr().err
    assert err == "vramdesk: error: s.json: the output would replace the input scenario; choose another -o\n"
    # the same file under other names: ./s.json, a symlink, a hard link
    (tmp_path / "link.json").symlink_to(s)
    os.link(s, tmp_path / "hard.json")
    for out in ("./s.json", str(s), "link.json", "hard.json"):
        assert run_cli("export", "s.json", "--format", fmt, "-o", out)[0] == 2, out
        assert "would replace the input scenario" in capsys.readouterr().err
    assert run_cli("export", "link.json", "--format", fmt, "-o", "s.json")[0] == 2
    assert s.read_bytes() == before and (tmp_path / "link.json").is_symlink()


def test_the_child_renderer_refuses_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m vramdesk.ui.export SCENARIO --format png -o SCENARIO`` (what `export` runs for pictures)."""
    pytest.importorskip("PySide6")
    from vramdesk.ui import export as ex

    s = tmp_path / "s.json"
    save_scenario(DEFAULT_SCENARIO, s)
    before = s.read_bytes()
    for fmt in ex.FORMATS:
        assert ex.main([str(s), "--format", fmt, "-o", str(s)]) == 2
        assert "the output would replace the input scenario; choose another -o" in capsys.readouterr().err
    assert s.read_bytes() == before


def test_compare_never_writes_over_one_of_its_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    save_scenario(named("a"), a)
    save_scenario(named("b", batch=2), b)
    (tmp_path / "b-link.json").symlink_to(b)
    before = a.read_bytes(), b.read_bytes()
    for fmt in ("md", "csv", "json"):
        for out in (a, b, tmp_path / "b-link.json"):
            assert run_cli("compare", str(a), str(b), "--format", fmt, "-o", str(out))[0] == 2
            err = capsys.readouterr().err
            assert err == f"vramdesk: error: {out}: the output would replace the input scenario; choose another -o\n"
    assert (a.read_bytes(), b.read_bytes()) == before
    assert run_cli("compare", str(a), str(b), "-o", str(tmp_path / "c.md"))[0] == 0  # another file is fine
    assert (tmp_path / "c.md").read_text().startswith("# vramdesk comparison")


def test_same_file_sees_links_and_paths_not_yet_written(tmp_path: Path) -> None:
    f = tmp_path / "x.json"
    f.write_text("{}")
    (tmp_path / "sub").mkdir()
    assert same_file(f, tmp_path / "sub" / ".." / "x.json")
    assert not same_file(f, tmp_path / "y.json")
    assert same_file(tmp_path / "new.md", tmp_path / "sub" / ".." / "new.md")  # neither exists yet
    with pytest.raises(OutputIsInputError, match=r"^out: the output would replace it; go$"):
        check_output("out", ["a", "out"], what="it", advice="go")
    with pytest.raises(OSError):  # what every "cannot write" handler already catches
        check_output(f, [f])


# ---------------------------------------------------------------------------------------------- Markdown, HTML


def _evil_estimate(est: Estimate) -> Estimate:
    comps = [est.components[0].model_copy(update={"name": f"w {SCRIPT}", "explain": EVIL}), *est.components[1:]]
    return est.model_copy(
        update={"model_id": f"acme/{SCRIPT}", "components": comps, "warnings": [EVIL], "constants": {"k": EVIL}}
    )


def _assert_markdown_is_inert(md: str) -> None:
    for raw in ("<script", "</script", "javascript:", "vbscript:", "data:", "<javascript", "\nnew line"):
        assert raw not in md, raw
    assert not re.search(r"(?<!\\)[\[\]]", md.replace("![Breakdown", "")), "a bracket that is not escaped"
    assert "&lt;script&gt;" in md
    # and a renderer with raw HTML switched on makes no element, link or image of it
    markdown_it = pytest.importorskip("markdown_it")
    rendered = markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table").render(md)
    assert "<script" not in rendered and "<a " not in rendered and "<img" not in rendered


def test_markdown_report_keeps_user_and_hub_text_as_text(base: Base) -> None:
    s, est, perf = base
    evil = _evil_estimate(est)
    scenario = s.model_copy(update={"name": f"{SCRIPT} {LINK}"})
    md = t.report_markdown(t.ReportData(evil, scenario, perf, accuracy=()))
    _assert_markdown_is_inert(md)
    assert "\\[click\\]" in md and "\\`code\\`" in md and "&amp; more" in md and "javascript&#58;" in md
    assert md.startswith("# vramdesk report: &lt;script&gt;alert(1)&lt;/script&gt; \\[click\\]")
    _assert_markdown_is_inert(t.breakdown_markdown(evil))


def test_markdown_comparison_keeps_names_and_errors_as_text(base: Base) -> None:
    s, est, perf = base
    items = [
        rc.CompareItem(f"{SCRIPT} {AUTOLINK}", s.model_copy(update={"name": EVIL}), _evil_estimate(est), perf),
        rc.CompareItem(LINK, s, error=EVIL),
    ]
    md = rc.comparison_markdown(rc.build_comparison(items))
    _assert_markdown_is_inert(md)
    assert "| Weights | auto (checkpoint) | auto (checkpoint) |" in md  # the ordinary cells are as they were


def test_html_reports_escape_everything(base: Base) -> None:
    s, est, perf = base
    evil = _evil_estimate(est)
    quote = '" onmouseover="alert(1)'
    scenario = s.model_copy(update={"name": f"{SCRIPT}{quote}"})
    docs = [
        t.report_html(t.ReportData(evil, scenario, perf, accuracy=())),
        rc.comparison_html(rc.build_comparison([rc.CompareItem(f"{SCRIPT}{quote}", scenario, evil, perf)])),
    ]
    for doc in docs:
        assert "<script" not in doc and 'onmouseover="' not in doc and "&lt;script&gt;" in doc


# ---------------------------------------------------------------------------------------------- CSV, TSV

FORMULAS = ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1)", "\t=1+1", "\r=1+1", "=1", "-", "+"]
NUMBERS = ["-1.5", "-3", "+2", "1e5", "-2.5e-3", "12.5%", "0", "3.25"]


def test_csv_cells_never_start_a_formula_but_numbers_stay_numbers() -> None:
    for cell in FORMULAS:
        assert t.csv_cell(cell) == "'" + cell.replace("\r", "\n"), cell
    assert t.write_rows([("a\rb", "c")]) == '"a\nb",c\n'  # a CR cannot start a row: the cell is quoted
    for cell in NUMBERS:
        assert t.csv_cell(cell) == cell, cell
    assert t.csv_cell(-3) == -3 and t.csv_cell("plain text") == "plain text" and t.csv_cell(None) is None


def _cells(text: str, delimiter: str = ",") -> list[str]:
    return [c for row in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter) for c in row]


def test_breakdown_and_comparison_csv_tsv_are_neutralised(base: Base) -> None:
    s, est, perf = base
    evil = est.model_copy(
        update={"components": [est.components[0].model_copy(update={"name": n}) for n in FORMULAS[:6]]}
    )
    for text, sep in ((t.breakdown_csv(evil), ","), (t.breakdown_tsv(evil), "\t")):
        cells = _cells(text, sep)
        assert all(not c.startswith(("=", "+", "-", "@", "\t", "\r")) for c in cells if not _number(c)), cells
        assert "'=cmd|' /C calc'!A0" in cells and "'-2+3" in cells
    items = [
        rc.CompareItem(FORMULAS[0], s.model_copy(update={"name": "@SUM(A1)"}), est, perf),
        rc.CompareItem("+1+1", named("-2+3", batch=2), error='=HYPERLINK("http://x")'),
    ]
    cmp = rc.build_comparison(items)
    for text, sep in ((rc.comparison_csv(cmp), ","), (rc.comparison_tsv(cmp), "\t")):
        cells = _cells(text, sep)
        assert all(not c.startswith(("=", "+", "-", "@", "\t", "\r")) for c in cells if not _number(c)), cells
        # (the columns are named by their labels: a scenario's own name is no row of its own)
        assert {"'=cmd|' /C calc'!A0", "'+1+1", '\'=HYPERLINK("http://x")'} <= set(cells)
    rows = list(csv.reader(io.StringIO(rc.comparison_csv(cmp))))
    dev = next(r for r in rows if r[2] == "on the device (per GPU)")
    assert int(dev[6]) == est.device_bytes  # byte counts are still integers


def _number(cell: str) -> bool:
    try:
        float(cell.rstrip("%"))
    except ValueError:
        return False
    return True


def test_negative_numbers_stay_numbers_in_csv() -> None:
    rows = [("a", -1.5, "-1.5", "-3", -3)]
    assert t.write_rows(rows) == "a,-1.5,-1.5,-3,-3\n"


# ---------------------------------------------------------------------------------------------- credentials


def test_redact_removes_passwords_tokens_and_signatures() -> None:
    cases = {
        "http://user:secret@127.0.0.1:9/x": "http://***@127.0.0.1:9/x",
        "https://user:p@ss/w0rd@host/a?token=secret&x=1": "https://***@host/a?token=***&x=1",
        "cannot reach user:secret@127.0.0.1:9 (ConnectError)": "cannot reach user:***@127.0.0.1:9 (ConnectError)",
        "GET http://h/api?access_token=secret#top": "GET http://h/api?access_token=***#top",
        "s3 https://b.s3/x?X-Amz-Signature=secret&X-Amz-Credential=secret": (
            "s3 https://b.s3/x?X-Amz-Signature=***&X-Amz-Credential=***"
        ),
        "token hf_abcdefghijklmnopqrstuvwxyz0123 given to hf_hub_url": "token hf_*** given to hf_hub_url",
        "header Authorization: Bearer secretsecret": "header Authorization: Bearer ***",
    }
    for text, want in cases.items():
        assert redact(text) == want
    for plain in ("http://127.0.0.1:8080/api/models", "acme/x:Q4_K_M on host:80", "C:/Users/me/x.json", ""):
        assert redact(plain) == plain
    assert display_endpoint("http://user:se/cret@mirror/hf?token=secret") == "mirror/hf"
    assert display_endpoint("https://mirror.example/@org/hf") == "mirror.example/@org/hf"


def test_hub_and_resolve_errors_are_redacted_where_they_are_made() -> None:
    """huggingface_hub / httpx texts that quote the URL become our messages without the password."""
    raw = RuntimeError("GET http://user:secret@hub.local/api/models?token=secret failed: hf_" + "a" * 34)
    err = map_error(raw, "searching", repo=None, endpoint="http://user:secret@hub.local", has_token=True)
    assert "secret" not in str(err) and "a" * 34 not in err.message and "hub.local" in str(err)
    assert "secret" not in str(HubError("server", "at http://u:secret@h/x"))
    assert "secret" not in str(ResolveError("Hub: http://u:secret@h/x?access_token=secret"))


def _refusing_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again: nothing listens there


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeHub]:
    with hub_environment(monkeypatch, tmp_path) as fake:
        fake.add_model("acme/tiny-llama", info={"downloads": 5}, files={"config.json": json.dumps(TINY_CONFIG)})
        yield fake


def _endpoints(hub: FakeHub) -> list[str]:
    port = hub.url.rsplit(":", 1)[1]
    dead = _refusing_port()
    return [
        f"http://user:secret@127.0.0.1:{dead}",
        f"http://user:se/cret@127.0.0.1:{dead}",
        f"http://user:secret@127.0.0.1:{dead}/hf?access_token=secret",
        f"user:secret@127.0.0.1:{dead}",
        f"http://user:secret@127.0.0.1:{port}",  # the fake Hub, answering errors below
        f"http://user:secret@127.0.0.1:{port}/?token=secret",
    ]


def test_credentials_in_hf_endpoint_never_show(
    hub: FakeHub, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hub.fail["^/api/models$"] = (500, "")
    hub.fail["/resolve/"] = (503, "")
    for endpoint in _endpoints(hub):
        monkeypatch.setenv("HF_ENDPOINT", endpoint)
        # the command line: search (a note on stderr), estimate (an error), both as text and JSON
        for args in (("search", "llama"), ("search", "llama", "--json"), ("estimate", "acme/tiny-llama")):
            run_cli(*args)
            out, err = capsys.readouterr()
            assert "secret" not in out + err and "cret" not in out + err, (endpoint, args, out, err)
            assert err.strip(), (endpoint, args)  # something was said, without the password
        # the exceptions and notes the window shows
        client = HubClient(token=False, timeout=2.0)
        for call in (client.search, client.config):
            with pytest.raises(HubError) as exc:
                call("acme/tiny-llama")
            assert "secret" not in str(exc.value) and "cret" not in exc.value.message, endpoint
        with pytest.raises(ResolveError) as rexc:
            resolve_model("acme/tiny-llama", client=client)
        assert "secret" not in str(rexc.value), endpoint
        note = hub_results("llama", client=client, timeout=2.0).note or ""
        assert note and "secret" not in note, endpoint
    assert hub.log  # the fake Hub was asked (and answered errors)


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges on Windows")
def test_symlinked_output_folder_is_the_same_file(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "s.json").write_text("{}")
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    with pytest.raises(OutputIsInputError):
        check_output(tmp_path / "alias" / "s.json", [tmp_path / "real" / "s.json"])


def test_search_output_cannot_drive_the_terminal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mirror (HF_ENDPOINT) answering with escape sequences in a model id: `vramdesk search` prints them as '?'
    (an ESC sequence would clear, recolour or retitle the user's terminal)."""
    with hub_environment(monkeypatch, tmp_path) as fake:
        fake.add_model("evil/Nimbus\x1b[2J\x1b]0;pwned\x07-7B", files={"config.json": json.dumps(TINY_CONFIG)})
        out = io.StringIO()
        cli.main(["search", "nimbus", "--limit", "5"], out=out)
    text = out.getvalue() + capsys.readouterr().err
    assert "evil/Nimbus" in text and "\x1b" not in text and "\x07" not in text


def test_a_mirrors_model_list_is_read_strictly(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """NaN in a mirror's /api/models answer: a one-line note and the local results, not a traceback."""
    real_send = FakeHub._send

    def send(self: FakeHub, h: object, code: int, body: bytes = b"", *args: object, **kwargs: object) -> None:
        real_send(self, h, code, body.replace(b"7777777", b"NaN"), *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(FakeHub, "_send", send)
    with hub_environment(monkeypatch, tmp_path) as fake:
        fake.add_model("newlab/Qwen3-8B-NaN", info={"downloads": 7777777})
        out = io.StringIO()
        code = cli.main(["search", "qwen3 8b", "--limit", "5"], out=out)
    err = capsys.readouterr().err
    assert code == 0 and "[catalog] Qwen/Qwen3-8B" in out.getvalue()
    assert "not valid JSON (NaN is not a number JSON allows)" in err and len(err.strip().splitlines()) == 1
