"""GPU advice: which catalog GPUs fit (and how many), with their speed, as sortable rows."""

from __future__ import annotations

from vramdesk.core.advice import advise, sort_rows
from vramdesk.core.estimate import estimate
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import default_catalog


def test_advice_rows_fit_and_sort() -> None:
    cat = default_catalog()
    s = Scenario.model_validate(
        {"model": {"id": "meta-llama/Llama-3.1-70B"}, "weights": "fp8", "workload": {"engine": "vllm"}}
    )
    f = cat.facts(s.model.id)
    names = ("RTX 4090", "A100 80GB SXM", "H100 SXM", "H200 SXM", "T4")
    rows = advise(s, f, [cat.gpu(n) for n in names])
    assert {r.gpu for r in rows} == set(names)
    by = {r.gpu: r for r in rows}
    assert by["H200 SXM"].gpus == 1
    h100 = by["H100 SXM"].gpus
    assert h100 is not None and h100 >= 2
    assert by["T4"].gpus is None or by["T4"].gpus > h100
    # every fitting row was checked with the estimator at that count
    for r in rows:
        if r.gpus is None:
            continue
        g = cat.gpu(r.gpu)
        scenario = s.model_copy(
            update={
                "hardware": s.hardware.model_copy(update={"gpu": r.gpu, "gpu_count": r.gpus}),
                "parallelism": s.parallelism.model_copy(update={"tp": r.gpus}),
            }
        )
        est = estimate(scenario, f, g)
        assert est.fit is not None and est.fit.verdict == "fits"
        assert r.decode_tokens_per_s is not None and r.decode_tokens_per_s > 0
    fitting = [r for r in rows if r.gpus is not None]
    assert [r.gpus for r in fitting] == sorted(r.gpus or 0 for r in fitting)
    fastest = sort_rows(rows, "decode", descending=True)
    speeds = [r.decode_tokens_per_s for r in fastest if r.decode_tokens_per_s is not None]
    assert speeds == sorted(speeds, reverse=True)
    assert fastest[0].gpu in ("H100 SXM", "H200 SXM")  # 2-way tensor parallel H100 can beat one H200
    assert sort_rows(rows, "name")[0].gpu == "A100 80GB SXM"


def test_advice_for_training() -> None:
    cat = default_catalog()
    s = Scenario.model_validate(
        {"model": {"id": "meta-llama/Llama-3.1-8B"}, "workload": {"kind": "finetune", "method": "qlora"}}
    )
    rows = advise(s, cat.facts(s.model.id), [cat.gpu("RTX 4090"), cat.gpu("H100 SXM")])
    assert all(r.gpus == 1 and r.train_tokens_per_s for r in rows)
    assert sort_rows(rows, "train", descending=True)[0].gpu == "H100 SXM"
