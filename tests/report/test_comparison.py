"""The comparison's rows and writers, Qt-free: the verdict and the totals first, the inputs grouped with human
labels (no dotted field paths shown), differences flagged, byte rows in the unit asked for, every format read back."""

from __future__ import annotations

import csv
import io
import json
from html.parser import HTMLParser

import pytest

from vramdesk.cli_common import estimate_and_speed
from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.gpu import GIB
from vramdesk.core.options import by_path
from vramdesk.core.scenario import Scenario
from vramdesk.report import comparison as c
from vramdesk.report.compare_rows import INPUT_GROUPS, input_group, input_label
from vramdesk.report.tables import json_text, scenario_inputs


def scenario(**changes: object) -> Scenario:
    data = DEFAULT_SCENARIO.model_dump()
    for k, v in changes.items():
        if k in ("batch", "engine", "output_len"):
            data["workload"][k] = v
        elif k in ("gpu", "gpu_count"):
            data["hardware"][k] = v
        else:
            data[k] = v
    return Scenario.model_validate(data)


def item(label: str, s: Scenario) -> c.CompareItem:
    est, perf = estimate_and_speed(s)
    return c.CompareItem(label, s, est, perf)


FINETUNE = Scenario.model_validate(
    {
        "model": {"id": "meta-llama/Llama-3.1-8B"},
        "hardware": {"gpu": "H100 SXM", "gpu_count": 8, "nodes": 1},
        "parallelism": {"zero": 3},
        "workload": {"kind": "finetune", "method": "lora"},
    }
)


@pytest.fixture(scope="module")
def three() -> c.Comparison:
    return c.build_comparison(
        [
            item("bf16", DEFAULT_SCENARIO),
            item("int4", scenario(weights="int4")),
            item("batch 8", scenario(batch=8, output_len=2048)),
        ]
    )


class Html(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.tags: list[str] = []
        self.imgs: list[dict[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "img":
            self.imgs.append(dict(attrs))
        elif tag not in ("meta", "br"):
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, (self.stack, tag)
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        if data.strip():
            self.text.append(data.strip())


def test_the_verdict_and_the_totals_come_first_then_components_then_grouped_inputs(three: c.Comparison) -> None:
    blocks = [b for b, _ in three.blocks()]
    assert blocks == ["verdict", "total", "speed", "component", "model", "workload", "hardware", "engine"]
    assert [r.name for r in three.rows[:2]] == ["GPU", "verdict"]
    assert three.rows[1].cells == ("fits", "fits", "fits")
    sections = [r.section for r in three.rows]
    # each section is one run, in the order the blocks name
    assert sections == sorted(sections, key=["verdict", "total", "speed", "component", "input"].index)
    groups = [r.group for r in three.rows if r.section == "input"]
    assert groups == sorted(groups, key=INPUT_GROUPS.index)
    assert "training" not in groups  # no plan trains: ZeRO, FSDP and offload are left out
    assert not any(r.name.startswith("parallelism.zero") for r in three.rows)
    assert "name" not in {r.name for r in three.rows}  # the plans' names are the columns


def test_inputs_have_human_labels_and_keep_their_path_as_key(three: c.Comparison) -> None:
    inputs = {r.name: r for r in three.section("input")}
    assert inputs["weights"].label == "Weights" and inputs["weights"].group == "model"
    assert inputs["workload.batch"].label == "Batch" and inputs["workload.batch"].group == "workload"
    assert inputs["model.id"].label == "Model ID" and inputs["hardware.gpu_count"].group == "hardware"
    assert inputs["workload.engine"].group == "engine"
    assert inputs["workload.full_prompt_logits"].label == "Logits for the whole prompt"  # a check box's label
    assert all("." not in r.label and "_" not in r.label for r in three.rows if r.section != "component")
    # a choice shows its words: the checkpoint's own weights
    assert inputs["weights"].cells == ("auto (checkpoint)", "int4", "auto (checkpoint)")
    # every field of an inference and a training plan is an option or has a written label
    for s in (DEFAULT_SCENARIO, FINETUNE):
        for path in scenario_inputs(s):
            if path != "name":
                assert path in by_path() or str(input_label(path)) != path.rsplit(".", 1)[-1].capitalize(), path


def test_training_inputs_group_under_training_where_a_plan_trains() -> None:
    cmp = c.build_comparison([item("one", FINETUNE), item("two", FINETUNE.model_copy(update={"name": "x"}))])
    groups = {r.name: r.group for r in cmp.section("input")}
    assert groups["parallelism.zero"] == "training" and groups["workload.optimizer"] == "training"
    assert groups["workload.method"] == "workload" and groups["parallelism.tp"] == "hardware"
    zero = next(r for r in cmp.rows if r.name == "parallelism.zero")
    assert zero.cells == ("ZeRO-3", "ZeRO-3") and not zero.differs
    assert input_group("workload.llamacpp.n_gpu_layers") == "engine"


def test_differences_are_flagged_and_only_differences_leaves_the_rest_out(three: c.Comparison) -> None:
    rows = {r.name: r for r in three.rows}
    assert rows["weights"].differs and rows["workload.batch"].differs and not rows["model.id"].differs
    assert rows["KV cache"].differs and not rows["hardware.gpu"].differs
    short = dict(three.blocks(only_differences=True))
    assert [r.name for r in short["model"]] == ["weights"]
    assert "hardware" not in short and "engine" not in short  # nothing differs there: the block goes
    assert [r.name for r in short["verdict"]] == ["GPU", "verdict"]  # the results always show
    assert all(r.differs for r in short["component"])


def test_byte_rows_keep_bytes_and_print_in_the_unit_asked_for(three: c.Comparison) -> None:
    dev = next(r for r in three.rows if r.name == "on the device (per GPU)")
    assert dev.unit == "bytes" and all(isinstance(v, int) for v in dev.values)
    assert dev.texts("GiB") == tuple(f"{v / GIB:.2f}" for v in dev.values) == dev.cells
    assert dev.texts("GB") == tuple(f"{v / 1e9:.2f}" for v in dev.values)
    md = c.comparison_markdown(three, "GB")
    assert "## Totals (GB)" in md and "## Components at the peak (GB)" in md and "GiB" not in md
    assert f"| On the device (per GPU) | {' | '.join(dev.texts('GB'))} |" in md
    with pytest.raises(ValueError, match="unknown unit 'MB'"):
        dev.texts("MB")


def test_markdown_reads_top_down_with_labels(three: c.Comparison) -> None:
    md = c.comparison_markdown(three)
    assert md.startswith("# vramdesk comparison of 3 plans\n")
    heads = [ln for ln in md.splitlines() if ln.startswith("#")]
    assert heads[1:] == [
        "## Fit on the GPU",
        "## Totals (GiB)",
        "## Speed",
        "## Components at the peak (GiB)",
        "## Inputs",
        "### Model",
        "### Workload",
        "### Hardware",
        "### Engine",
    ]
    assert "| Verdict | fits | fits | fits |" in md
    assert "| **Weights** | auto (checkpoint) | int4 | auto (checkpoint) |" in md
    assert "| Model ID | Qwen/Qwen3-4B | Qwen/Qwen3-4B | Qwen/Qwen3-4B |" in md
    assert "workload." not in md and "hardware." not in md


def test_csv_and_json_keep_the_keys_the_labels_and_integer_bytes(three: c.Comparison) -> None:
    rows = list(csv.DictReader(io.StringIO(c.comparison_csv(three))))
    assert list(rows[0])[: len(c.CSV_HEADER)] == list(c.CSV_HEADER) and list(rows[0])[6:] == list(three.labels)
    dev = next(r for r in rows if r["name"] == "on the device (per GPU)")
    want = next(r for r in three.rows if r.name == "on the device (per GPU)").values
    assert [int(dev[label]) for label in three.labels] == list(want) and dev["unit"] == "bytes"
    batch = next(r for r in rows if r["name"] == "workload.batch")
    assert (batch["label"], batch["group"], batch["differs"], batch["batch 8"]) == ("Batch", "workload", "1", "8")
    assert rows[0]["section"] == "verdict"
    short = list(csv.DictReader(io.StringIO(c.comparison_csv(three, only_differences=True))))
    assert {r["name"] for r in short} < {r["name"] for r in rows} and "model.id" not in {r["name"] for r in short}

    doc = json.loads(json_text(c.comparison_json(three, "GB")))
    assert doc["columns"] == ["bf16", "int4", "batch 8"] and doc["unit"] == "GB"
    jdev = next(r for r in doc["rows"] if r["name"] == "on the device (per GPU)")
    assert jdev["values"] == list(want) and jdev["cells"] == [f"{v / 1e9:.2f}" for v in want]
    labels = {(r["section"], r["name"]): r["label"] for r in doc["rows"]}
    assert labels["input", "weights"] == "Weights" and labels["component", "weights"] == "weights"


def test_html_has_the_verdict_first_and_the_chart_after_it(three: c.Comparison) -> None:
    text = c.comparison_html(three, "data:image/png;base64,AAAA", unit="GB", only_differences=True)
    p = Html()
    p.feed(text)
    assert not p.stack and p.tags.count("table") == len(three.blocks(only_differences=True))
    assert p.text[p.text.index("Fit on the GPU") + 1 :][:4] == [*three.labels, "GPU"]  # the table, then its rows
    assert text.index("Fit on the GPU") < text.index("<img") < text.index("Totals (GB)")
    assert [i["src"] for i in p.imgs] == ["data:image/png;base64,AAAA"]
    assert 'class="verdict fits"' in text and "Model ID" not in text  # equal inputs left out
    assert "Batch" in p.text and "workload.batch" not in text


def test_a_comparison_names_machines_and_groups_equal_gpus() -> None:
    def plan(nodes: int) -> c.CompareItem:
        s = FINETUNE.model_copy(update={"hardware": FINETUNE.hardware.model_copy(update={"nodes": nodes})})
        s = s.model_copy(update={"workload": s.workload.model_copy(update={"method": "full"})})
        return item(f"{nodes} machines", s)

    cmp = c.build_comparison([plan(1), plan(2)])
    rows = {r.name: r for r in cmp.rows}
    assert rows["GPU"].cells == ("8 x H100 SXM", "2 machines x 8 x H100 SXM")
    gpu_rows = [r for r in cmp.section("verdict") if r.unit == "bytes"]
    # GPUs 0-7 exist in both plans (different figures), 8-15 only in the second: two rows, not sixteen
    assert [r.name for r in gpu_rows] == ["GPU 0-7 on the device, each", "GPU 8-15 on the device, each"]
    assert [r.label for r in gpu_rows] == ["GPU 0-7 on the device, each", "GPU 8-15 on the device, each"]
    assert gpu_rows[1].values[0] is None and gpu_rows[1].texts("GB")[0] == "–"


def test_a_plan_that_cannot_be_estimated_is_a_column_with_its_error() -> None:
    broken = scenario(weights="no-such-format")
    cmp = c.build_comparison([item("a", DEFAULT_SCENARIO), c.CompareItem("c", broken, error="bad")])
    rows = {r.name: r for r in cmp.rows}
    assert rows["error"].cells == ("–", "bad") and rows["error"].section == "verdict"
    assert rows["weights"].values == ("auto", "no-such-format")
    assert cmp.errors == (None, "bad")
