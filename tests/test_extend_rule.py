"""docs/extending.md's decision-rule recipe, followed to the letter: a rule "ci90-inside" (equiv. when the
unadjusted 90% BCa CI lies inside the margin, else diff. when the 95% CI excludes 0, else incon.) is one entry
in harness.plan.rules.RULE_TERMS and one in harness.stats.rules.RULES, and nothing else. A small study whose
plan registers a test under it runs on its rehearsal twin (harness.rehearsal) through every stage, stats,
audit and report included, in this process (the stage commands themselves, so the registries seen are the
patched ones)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from harness.cli.main import main
from harness.errors import HarnessError
from harness.inference.simulate import SyntheticDataset, long_table
from harness.pipeline.stages import configured_stages, stage_arguments
from harness.plan.load import load_plan
from harness.plan.rules import RULE_TERMS, RuleTerms
from harness.rehearsal.stages import RESCORED_CELLS, family_results
from harness.rehearsal.summary import outcomes
from harness.rehearsal.twin import make_twin
from harness.stats.contrast import ContrastResult
from harness.stats.replicates import replicate_verdicts
from harness.stats.rules import RULES, DecisionContext, Rule, decided_labels
from harness.stats.verdicts import DIFFERENT, EQUIVALENT, INCONCLUSIVE, Decision, excludes_zero
from harness.study import Study

HANDBOOK = Path(__file__).resolve().parents[1] / "examples" / "handbook"
# on the twin's data (seed 0, small scale) under the family's seed, the 90% CI of provisions - sentence is
# [-20, 20] and the 95% one [-24, 24]: only the 90% one is inside this margin, so a rule reading the 95% CI
# would not say equiv.
MARGIN = 22


def ci90_inside(c: ContrastResult, ctx: DecisionContext) -> Decision:
    lo, hi = c.ci90_bca
    if ctx.margin is not None and -ctx.margin < lo and hi < ctx.margin:
        return Decision(EQUIVALENT, small_difference_within_margin=excludes_zero(c.ci95_bca))
    return Decision(DIFFERENT) if excludes_zero(c.ci95_bca) else Decision(INCONCLUSIVE)


TERMS = RuleTerms(name="ci90-inside", title="CI90-inside", needs_margin=True,
                  unadjusted_only="judges unadjusted 90% CIs")
RULE = Rule(name="ci90-inside", decisive_p="p_signflip", ci_shown="90",
            verdicts=(EQUIVALENT, DIFFERENT, INCONCLUSIVE), decide=ci90_inside,
            caption=lambda _signflip: "CI90-inside rows show the unadjusted 90% BCa CI; equiv. needs it "
            "inside the margin")


def _register(monkeypatch, *, terms: bool = True, rule: bool = True) -> None:
    if terms:
        monkeypatch.setitem(RULE_TERMS, TERMS.name, TERMS)
    if rule:
        monkeypatch.setitem(RULES, RULE.name, RULE)


def _study(root: Path) -> Study:
    """The handbook's data, two of its chunkers at L = 450 under BM25, a plan of one test under the rule."""
    study = root / "study"
    shutil.copytree(HANDBOOK / "data", study / "data")
    config = yaml.safe_load((HANDBOOK / "configs" / "study.yaml").read_text(encoding="utf-8"))
    config["arms"] = {arm: {"kind": arm, "L": 450} for arm in ("provisions", "sentence")}
    config["retrievers"] = {"bm25": config["retrievers"]["bm25"]}
    plan = yaml.safe_load((HANDBOOK / "plan" / "plan.yaml").read_text(encoding="utf-8"))
    plan["bootstrap"]["resamples"] = 1000
    plan |= {"arms": ["provisions", "sentence"], "retrievers": ["bm25"], "families": [{
        "id": "ext", "description": "Are provisions and sentence windows equivalent?", "tier": "secondary",
        "multiplicity": "none", "decision": {"rule": "ci90-inside", "signflip_required": False}, "seed": 1607,
        "tests": [{"id": "ext-ps", "a": "provisions", "b": "sentence", "retriever": "bm25",
                   "dataset": "handbook", "metric": "complete@120w", "margin": MARGIN}]}]}
    for folder, name, doc in (("configs", "study.yaml", config), ("plan", "plan.yaml", plan)):
        (study / folder).mkdir()
        (study / folder / name).write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return Study.at(study)


def _rehearse(root: Path) -> tuple[Study | None, str | None]:
    """The twin, and where the rehearsal stopped: "twin" (the plan refused when the twin is made), the first
    stage that failed, or None when every stage ran."""
    try:
        twin = make_twin(_study(root), root / "twin", scale="small", seed=0)
    except HarnessError:
        return None, "twin"
    for stage in configured_stages(twin):
        args = stage_arguments(stage, None, rescore=RESCORED_CELLS)
        if main([stage, "--study", str(twin.root), "--quiet", *args]) != 0:
            return twin, stage
    return twin, None


def test_a_rule_in_the_two_registries_decides_from_its_90_interval_through_rehearsal_stats_and_report(
        tmp_path, monkeypatch):
    _register(monkeypatch)
    twin, failed = _rehearse(tmp_path)
    assert twin is not None and failed is None
    family = next(f for f in family_results(twin) if f.family == "ext")
    row, = family.rows
    c = row.contrast
    assert c is not None and (row.rule, row.ci_shown, row.margin) == ("ci90-inside", "90", MARGIN)
    assert -MARGIN < c.ci90_bca[0] and c.ci90_bca[1] < MARGIN  # the data the recipe needs: see MARGIN
    assert not (-MARGIN < c.ci95_bca[0] and c.ci95_bca[1] < MARGIN)
    assert row.verdict == EQUIVALENT
    read_95 = RULES["ci95-within-margin"].decide(c, DecisionContext(1.0, MARGIN, 0.05, False))
    assert read_95.label == INCONCLUSIVE  # what the same contrast gives when its 95% CI is read
    shown, = outcomes(family_results(twin), {"ext": ["ext-ps"]})
    assert shown.verdict == EQUIVALENT
    report = (twin.root / "results" / "report" / "report.md").read_text(encoding="utf-8")
    assert "CI90-inside rows show the unadjusted 90% BCa CI" in report
    rows = [line for line in report.splitlines() if line.startswith("| ext-ps |")]
    assert len(rows) == 2  # the summary and the verdicts table, each ending in the verdict (and its tier)
    assert all(f"| {EQUIVALENT} |" in line for line in rows)


@pytest.mark.parametrize("terms, rule, stage", [(False, True, "twin"), (True, False, "stats")])
def test_without_either_entry_the_study_stops(tmp_path, monkeypatch, terms, rule, stage):
    """The plan refuses a rule it has no terms for (read when the twin is made); the statistics, one they
    cannot decide."""
    _register(monkeypatch, terms=terms, rule=rule)
    _, failed = _rehearse(tmp_path)
    assert failed == stage


def test_a_new_verdict_label_needs_no_third_place(tmp_path, monkeypatch):
    """A label only the new rule gives is a column of the known-effects table like the built-in ones."""
    def renamed(c: ContrastResult, ctx: DecisionContext) -> Decision:
        decision = ci90_inside(c, ctx)
        return Decision("inside") if decision.label == EQUIVALENT else decision

    inside = dataclasses.replace(RULE, verdicts=("inside", DIFFERENT, INCONCLUSIVE), decide=renamed)
    _register(monkeypatch)
    monkeypatch.setitem(RULES, RULE.name, inside)
    assert "inside" in decided_labels()
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump({
        "study": "t", "registered_at": "2025-01-01T00:00:00+00:00", "alpha": 0.05,
        "bootstrap": {"method": "bca-cluster", "resamples": 200},
        "permutation": {"method": "cluster-sign-flip", "max_flips": 200},
        "datasets": {"d": {"primary_metric": "m", "cluster": "question", "stratified": False, "margin": 50,
                           "metrics": ["m"]}},
        "arms": ["A", "B"], "retrievers": ["r"],
        "families": [{"id": "f", "description": "d", "tier": "secondary", "multiplicity": "none",
                      "decision": {"rule": "ci90-inside", "signflip_required": False}, "seed": 7,
                      "tests": [{"id": "t1", "a": "A", "b": "B", "retriever": "r", "dataset": "d",
                                 "metric": "m", "margin": 50}]}]}))
    table = long_table(np.random.default_rng(3), [SyntheticDataset("d", 30, 1.0)], {"A": 0.0, "B": 0.0},
                       ["r"], {"d": ["m"]})
    summary = replicate_verdicts(load_plan(path), table, effects={}, replicates=4, seed=1, resamples=100)
    header = summary.to_markdown().splitlines()[2]
    assert "| inside |" in header and summary.tests[0].shares["inside"] == 1.0

