"""The browser's fit badges without Qt: each model's verdict under the window's plan, the longest input or sequence
that fits (the form's readout's answer), the cache per plan, and what a model not on this machine shows."""

from __future__ import annotations

import ast
import json
import threading
from pathlib import Path

import pytest
from uiwindow import scenario_for

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.estimate import estimate
from vramdesk.core.facts import ModelFacts
from vramdesk.core.scenario import Scenario
from vramdesk.core.solve import with_work
from vramdesk.services.cache import AnswerCache
from vramdesk.services.catalog import default_catalog
from vramdesk.services.resolve import ResolveError
from vramdesk.ui import fit_badges, theme
from vramdesk.ui.advice_view import compute_advice, max_length_readout
from vramdesk.ui.fit_badges import (
    KEPT_PLANS,
    Badge,
    BadgeCache,
    FitPlan,
    NotOfflineError,
    OfflineFacts,
    accepts,
    badge_chunk,
    badge_colors,
    badge_text,
    badge_tooltip,
    compute_badge,
    sort_key,
)
from vramdesk.ui.presenter import evaluate_scenario, form_from_scenario, scenario_from_form

CAT = default_catalog()
RTX_4090 = CAT.gpu("RTX 4090")
H100 = CAT.gpu("H100 SXM")


def badge(model: str, plan: FitPlan) -> Badge:
    return compute_badge(plan, model, CAT.facts(model))


def test_a_small_model_fits_with_the_readout_s_longest_input_and_a_70b_does_not() -> None:
    plan = FitPlan(DEFAULT_SCENARIO, RTX_4090)
    small = badge("Qwen/Qwen3-4B", plan)
    assert small.state == "fits" and small.length_field == "input_len"
    # the same answer as the form's max-length readout for that plan
    advice = compute_advice(plan.for_model("Qwen/Qwen3-4B"), CAT.facts("Qwen/Qwen3-4B"), RTX_4090, verdict="fits")
    assert small.max_length == max_length_readout(advice).value
    # Qwen3-4B's 40,960 positions less the 512 generated tokens: the model's context stops the search first
    assert small.max_length == 40_960 - 512 and small.solved is not None and small.solved.limited_by == "model context"
    assert badge_text(small) == "Fits ≤ 39.5k"
    tip = badge_tooltip(small)
    assert tip.startswith("Fits: needs ") and "of 23.99 GiB total" in tip and "40,448" in tip
    big = badge("meta-llama/Llama-3.1-70B", plan)
    assert big.state == "does not fit" and big.max_length is None
    assert badge_text(big) == "Does not fit"
    assert "short by" in badge_tooltip(big) and "even input_len = 1 does not fit" in badge_tooltip(big)
    assert big.device_bytes is not None and big.fit is not None and big.device_bytes > big.fit.available_bytes


def test_a_memory_bound_limit_is_the_boundary_of_the_estimate() -> None:
    plan = FitPlan(DEFAULT_SCENARIO, RTX_4090)
    b = badge("Qwen/Qwen3-8B", plan)
    assert b.state == "fits" and b.solved is not None and b.solved.limited_by == "memory"
    assert b.max_length is not None
    facts = CAT.facts("Qwen/Qwen3-8B")
    scenario = plan.for_model("Qwen/Qwen3-8B")
    at = estimate(with_work(scenario, input_len=b.max_length), facts, RTX_4090).fit
    beyond = estimate(with_work(scenario, input_len=b.max_length + 1), facts, RTX_4090).fit
    assert at is not None and at.verdict == "fits" and beyond is not None and beyond.verdict != "fits"


def test_a_tight_plan_shows_the_longest_length_that_still_runs() -> None:
    fits = badge("Qwen/Qwen3-8B", FitPlan(DEFAULT_SCENARIO, RTX_4090))
    assert fits.max_length is not None
    # one token past the fitting boundary: tight (the headroom is eaten into)
    tight_plan = FitPlan(scenario_for("Qwen/Qwen3-4B", input_len=fits.max_length + 1), RTX_4090)
    b = badge("Qwen/Qwen3-8B", tight_plan)
    assert b.state == "tight"
    assert b.max_length is not None and b.max_length > fits.max_length
    assert badge_text(b).startswith("Tight ≤ ")


def test_the_plan_swaps_the_model_as_the_window_does() -> None:
    plan = FitPlan(
        scenario_for("Qwen/Qwen3-4B", batch=3).model_copy(update={"name": "Qwen3-4B, batch 3 on an RTX 4090"}), RTX_4090
    )
    other = plan.for_model("Qwen/Qwen3-8B")
    window = scenario_from_form(plan.scenario, form_from_scenario(plan.scenario).replace(model="Qwen/Qwen3-8B"))
    assert other == window
    assert other.model.id == "Qwen/Qwen3-8B" and other.workload == plan.scenario.workload
    assert other.name == "Qwen3-8B, batch 3 on an RTX 4090"  # a generated name follows
    assert plan.for_model("Qwen/Qwen3-4B") == plan.scenario


def test_the_plan_key_leaves_out_the_model_and_nothing_else() -> None:
    base = FitPlan(DEFAULT_SCENARIO, RTX_4090)
    same = FitPlan(scenario_for("Qwen/Qwen3-8B").model_copy(update={"name": "mine"}), RTX_4090)
    assert same.key == base.key
    assert FitPlan(DEFAULT_SCENARIO, H100).key != base.key
    assert FitPlan(scenario_for("Qwen/Qwen3-4B", batch=2), RTX_4090).key != base.key
    assert FitPlan(DEFAULT_SCENARIO, RTX_4090, headroom_fraction=0.2).key != base.key
    assert FitPlan(DEFAULT_SCENARIO, None).key != base.key
    detected = RTX_4090.model_copy(update={"free_bytes": 20 << 30})
    assert FitPlan(DEFAULT_SCENARIO, detected).key != base.key


def test_a_bigger_gpu_flips_a_badge() -> None:
    on_4090 = badge("Qwen/Qwen3-14B", FitPlan(DEFAULT_SCENARIO, RTX_4090))
    on_h100 = badge(
        "Qwen/Qwen3-14B",
        FitPlan(
            DEFAULT_SCENARIO.model_copy(
                update={"hardware": DEFAULT_SCENARIO.hardware.model_copy(update={"gpu": "H100 SXM"})}
            ),
            H100,
        ),
    )
    assert on_4090.state == "does not fit" and on_h100.state == "fits"
    assert on_h100.fit is not None and on_h100.fit.gpu == "H100 SXM"


def test_without_a_gpu_the_badge_is_the_memory_needed() -> None:
    plan = FitPlan(
        DEFAULT_SCENARIO.model_copy(update={"hardware": DEFAULT_SCENARIO.hardware.model_copy(update={"gpu": None})}),
        None,
    )
    b = badge("Qwen/Qwen3-4B", plan)
    ev = evaluate_scenario(plan.for_model("Qwen/Qwen3-4B"), resolve=CAT.facts)
    assert ev.view is not None and ev.view.verdict is None
    assert b.state == "no gpu" and b.device_bytes == ev.view.device_bytes and b.max_length is None
    assert badge_text(b) == f"needs {ev.view.device_bytes / 2**30:.2f} GiB"


def test_a_fine_tuning_plan_badges_the_longest_sequence() -> None:
    data = DEFAULT_SCENARIO.model_dump(mode="json")
    data["workload"] = {"kind": "finetune", "method": "lora", "seq_len": 2048}
    plan = FitPlan(Scenario.model_validate(data), RTX_4090)
    b = badge("Qwen/Qwen3-0.6B", plan)
    assert plan.length_field == "seq_len" and b.length_field == "seq_len"
    assert b.state == "fits" and b.solved is not None and b.solved.field == "seq_len"
    assert b.max_length is not None and b.max_length > 2048


def test_the_chunk_job_stops_when_cancelled_and_says_why_a_model_is_not_badged() -> None:
    plan = FitPlan(DEFAULT_SCENARIO, RTX_4090)
    asked: list[str] = []
    facts = OfflineFacts(CAT, resolve_offline=lambda ref: (_ for _ in ()).throw(ResolveError(f"{ref}: unreadable")))

    def facts_for(model_id: str, sources: tuple[str, ...]) -> ModelFacts:
        asked.append(model_id)
        return facts(model_id, sources)

    models = [
        ("Qwen/Qwen3-4B", ("catalog",)),
        ("acme/never-seen", ("hub",)),
        ("acme/broken", ("cache",)),
    ]
    out = badge_chunk(plan, models, facts_for, threading.Event())
    assert [b.model_id for b in out] == [m for m, _ in models] == asked
    assert [b.state for b in out] == ["fits", "unknown", "unknown"]
    assert "not on this machine" in out[1].reason and badge_text(out[1]) == "–"
    assert badge_tooltip(out[1]).startswith("Cannot estimate: Not estimated")
    assert "acme/broken: unreadable" in out[2].reason
    cancel = threading.Event()
    cancel.set()
    assert badge_chunk(plan, models, facts_for, cancel) == []


def test_offline_facts_read_the_cache_once_and_remember_what_the_window_read() -> None:
    calls: list[str] = []
    qwen = CAT.facts("Qwen/Qwen3-8B")

    def resolve(ref: str) -> ModelFacts:
        calls.append(ref)
        return qwen

    facts = OfflineFacts(CAT, resolve_offline=resolve)
    assert facts("Qwen/Qwen3-4B", ("catalog",)) is CAT.facts("Qwen/Qwen3-4B")
    assert facts("acme/cached", ("cache", "hub")) is qwen and facts("acme/cached", ("cache",)) is qwen
    assert calls == ["acme/cached"]
    with pytest.raises(NotOfflineError):
        facts("acme/hub-only", ("hub",))
    facts.remember("acme/hub-only", qwen)
    assert facts.knows("acme/hub-only") and facts("acme/hub-only", ("hub",)) is qwen
    assert calls == ["acme/cached"]


def test_a_model_in_the_hf_cache_is_badged_offline_and_stays_out_of_the_recent_list(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("VRAMDESK_CACHE_DIR", str(tmp_path / "vramdesk"))
    snap = tmp_path / "hf" / "models--acme--my-qwen" / "snapshots" / "0123abcd"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(CAT.config("Qwen/Qwen3-4B")), encoding="utf-8")
    (tmp_path / "hf" / "models--acme--my-qwen" / "refs").mkdir()
    (tmp_path / "hf" / "models--acme--my-qwen" / "refs" / "main").write_text("0123abcd", encoding="utf-8")
    facts = OfflineFacts(CAT)
    got = facts("acme/my-qwen", ("cache",))
    assert got.model_id == "acme/my-qwen" and got.arch.n_layers == CAT.facts("Qwen/Qwen3-4B").arch.n_layers
    assert AnswerCache().recent() == []  # a badge is not a use of the model
    out = badge_chunk(FitPlan(DEFAULT_SCENARIO, RTX_4090), [("acme/my-qwen", ("cache",))], facts, threading.Event())
    assert [b.state for b in out] == ["fits"]
    with pytest.raises(ResolveError):  # not in the cache, and the Hub is never asked
        facts("acme/not-here", ("cache",))


def test_the_cache_keeps_a_few_plans_and_forgets_a_model() -> None:
    cache = BadgeCache()
    keys = [f"plan {i}" for i in range(KEPT_PLANS + 1)]
    first = cache.plan(keys[0])
    cache.put(keys[0], [Badge("a", "fits"), Badge("b", "tight")])
    assert first == {"a": Badge("a", "fits"), "b": Badge("b", "tight")} and cache.plan(keys[0]) is first
    assert cache.missing(keys[0], ["a", "b", "c"]) == ["c"]
    for key in keys[1:]:
        cache.plan(key)
    assert keys[0] not in cache.plan_keys and cache.plan_keys == tuple(keys[1:])  # the oldest plan went
    cache.put(keys[0], [Badge("a", "fits")])  # an answer for a dropped plan keeps nothing
    assert keys[0] not in cache.plan_keys
    cache.put(keys[1], [Badge("a", "fits")])
    cache.forget("a")
    assert cache.missing(keys[1], ["a"]) == ["a"]


def test_sorting_puts_what_fits_first_and_the_filter_keeps_it() -> None:
    badges = [
        None,
        Badge("u", "unknown", reason="x"),
        Badge("d", "does not fit", device_bytes=90, max_length=1000),
        Badge("t", "tight", device_bytes=20, max_length=9000),
        Badge("f-short", "fits", device_bytes=10, max_length=2048),
        Badge("f-long", "fits", device_bytes=12, max_length=32768),
    ]
    ordered = sorted(badges, key=sort_key)
    assert [b.model_id if b else None for b in ordered] == ["f-long", "f-short", "t", "d", "u", None]
    assert [b.model_id for b in badges[1:] if accepts(b, "fits")] == ["f-short", "f-long"]
    assert [b.model_id for b in badges[1:] if accepts(b, "fits or tight")] == ["t", "f-short", "f-long"]
    assert all(accepts(b, "all") for b in badges) and not accepts(None, "fits")


def test_badge_colours_are_the_verdict_colours_and_read_in_both_themes() -> None:
    text, back = badge_colors("fits", theme.LIGHT)
    assert text == theme.VERDICT_COLORS["fits"] and back != theme.LIGHT.background
    for verdict in ("fits", "tight", "does not fit"):
        for palette in (theme.LIGHT, theme.DARK):
            fg, bg = badge_colors(verdict, palette)
            assert _contrast(fg, bg) >= 3.0, (verdict, palette.name, fg, bg)


def _contrast(a: str, b: str) -> float:
    def lum(c: str) -> float:
        rgb = [int(c[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        lin = [x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4 for x in rgb]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_fit_badges_import_nothing_of_qt() -> None:
    """Like the presenter (the import contract "the presenter is Qt-free"): no Qt, no widget module."""
    tree = ast.parse(Path(fit_badges.__file__).read_text(encoding="utf-8"))
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {("." * n.level) + (n.module or "") for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert names and not {m for m in names if m.split(".")[0] in ("PySide6", "shiboken6", "pyqtgraph")}
    qt_ui = {".widgets", ".qtapp", ".workers", ".qt_i18n", ".browser", ".forms", ".charts"}
    assert not names & qt_ui, names
