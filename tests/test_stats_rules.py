"""Decision rules as two registries keyed alike (what the plan must give: harness.plan.rules; how a rule
reads a contrast: harness.stats.rules) and family results as typed records."""

import dataclasses
import json

import numpy as np
import pytest
import yaml

from harness.errors import InputError
from harness.stats import rules
from harness.stats.families import FamilyResult, Status, run_family
from harness.plan.load import load_plan
from harness.plan.rules import RULE_TERMS, RuleTerms
from harness.stats.plots import forest_png
from harness.stats.contrast import ContrastResult
from harness.stats.rules import RULES, DecisionContext, Rule, ruled
from harness.inference.simulate import SyntheticDataset, long_table
from harness.stats.tables import caption, to_csv, to_latex, to_markdown
from harness.stats.verdicts import EQUIVALENT, INCONCLUSIVE, Decision


def _plan_doc(rule: str, multiplicity: str = "none", **test) -> dict:
    return {
        "study": "t", "registered_at": "2025-01-01T00:00:00+00:00", "alpha": 0.05,
        "bootstrap": {"method": "bca-cluster", "resamples": 300},
        "permutation": {"method": "cluster-sign-flip", "max_flips": 2000},
        "datasets": {"docs": {"primary_metric": "prec@1024t", "cluster": "question", "stratified": False,
                              "margin": 4, "metrics": ["prec@1024t"]}},
        "arms": ["A", "B"], "retrievers": ["hybrid"],
        "families": [{"id": "f", "description": "d", "tier": "secondary", "multiplicity": multiplicity,
                      "decision": {"rule": rule, "signflip_required": True}, "seed": 7,
                      "tests": [{"id": "t1", "a": "A", "b": "B", "retriever": "hybrid", "dataset": "docs",
                                 "metric": "prec@1024t"} | test]}],
    }


def _load(tmp_path, doc):
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_plan(path)


def _accepts(tmp_path, name: str) -> bool:
    # margins go only to rules that take one; a rule judging unadjusted values gets multiplicity: none
    extra = {"margin": 4} if RULE_TERMS.get(name) is None or RULE_TERMS[name].needs_margin else {}
    try:
        _load(tmp_path, _plan_doc(name, **extra))
    except InputError as e:
        assert "decision.rule" in str(e) or ".rule" in str(e) or "margin" in str(e), e
        return False
    return True


@pytest.fixture(scope="module")
def table():
    return long_table(np.random.default_rng(5), [SyntheticDataset("docs", 40, 1.0)], {"A": 0.03, "B": 0.0},
                      ["hybrid"], {"docs": ["prec@1024t"]})


def _contrast(ci95: tuple[float, float]) -> ContrastResult:
    """A contrast whose intervals are `ci95` (the 90% one a third narrower), on 20 clusters."""
    lo, hi = ci95
    ci90 = (lo + (hi - lo) / 6, hi - (hi - lo) / 6)
    return ContrastResult(dataset="docs", a="A", b="B", retriever="hybrid", metric="prec@1024t",
                          n_questions=40, n_clusters=20, n_strata=1, estimate=(lo + hi) / 2, ci90_bca=ci90,
                          ci95_bca=ci95, ci90_percentile=ci90, ci95_percentile=ci95, z0=0.0, acceleration=0.0,
                          resamples=300, seed=1, p_signflip=0.5, signflip_exact=False, signflip_flips=2000,
                          se_cluster=1.0)


def test_the_plan_and_the_statistics_know_the_same_rules():
    assert list(RULE_TERMS) == list(RULES)


@pytest.mark.parametrize("name", list(RULES))
def test_every_registered_rule_has_every_field(name):
    rule, terms = RULES[name], RULE_TERMS[name]
    assert rule.name == terms.name == name and terms.title
    assert rule.decisive_p in ("p_tost", "p_signflip") and rule.ci_shown in ("90", "95")
    assert isinstance(terms.needs_margin, bool) and isinstance(terms.holm_needs_signflip, bool)
    assert isinstance(terms.unadjusted_only, str) and rule.verdicts
    for signflip in (False, True):
        assert isinstance(rule.caption(signflip), str) and rule.caption(signflip)
    for ci95, p in (((-1.0, 1.0), 0.01), ((2.0, 6.0), 0.5), ((-3.0, 9.0), 0.9)):
        context = DecisionContext(p=p, margin=4.0, alpha=0.05, signflip_required=True)
        verdict = rule.decide(_contrast(ci95), context)
        assert isinstance(verdict, Decision) and verdict.label in rule.verdicts


def test_the_plan_accepts_exactly_the_registered_rule_names(tmp_path, monkeypatch):
    assert all(_accepts(tmp_path, name) for name in RULE_TERMS)
    assert not _accepts(tmp_path, "bayes")
    # a rule added to the plan's registry is accepted by the plan schema
    monkeypatch.setitem(RULE_TERMS, "bayes", dataclasses.replace(RULE_TERMS["two-sided"], name="bayes"))
    assert _accepts(tmp_path, "bayes")


def test_an_unknown_rule_in_a_released_file_is_named():
    with pytest.raises(InputError, match="unknown decision rule 'bayes' .*known: tost, two-sided"):
        rules.rule("bayes")


def test_a_rule_added_to_the_registry_alone_runs_and_renders(tmp_path, table, monkeypatch):
    """Adding a rule touches the two registries only: plan, families, tables and plots look it up."""

    def ci90_inside(c: ContrastResult, ctx: DecisionContext) -> Decision:
        inside = -ctx.margin < c.ci95_bca[0] and c.ci95_bca[1] < ctx.margin
        return Decision(EQUIVALENT) if inside else Decision(INCONCLUSIVE)

    added = Rule(
        name="ci-inside",
        decisive_p="p_tost",
        ci_shown="90",
        verdicts=(EQUIVALENT, INCONCLUSIVE),
        decide=ci90_inside,
        caption=lambda _signflip: "CI-inside rows need the 95% CI inside the margin",
    )
    monkeypatch.setitem(
        RULE_TERMS, added.name, RuleTerms(name="ci-inside", title="CI-inside", needs_margin=True)
    )
    monkeypatch.setitem(RULES, added.name, added)
    plan = _load(tmp_path, _plan_doc("ci-inside", multiplicity="holm", margin=50))
    result = run_family(plan, ruled(plan.family("f")), table)
    row = result.rows[0].to_json()
    assert row["rule"] == "ci-inside" and row["verdict"] == EQUIVALENT and row["ci_shown"] == "90"
    assert row["p_tost"] is not None and row["p_tost_holm"] == row["p_tost"]  # a family of one
    assert "CI-inside rows need" in caption(result) and "| t1 |" in to_markdown(result)
    assert "ci-inside" in to_csv(result) and "CI-inside" in to_latex(result)
    assert forest_png(result)[:4] == b"\x89PNG"


def test_a_rule_giving_an_undeclared_verdict_is_refused(tmp_path, table, monkeypatch):
    monkeypatch.setitem(RULES, "two-sided", dataclasses.replace(RULES["two-sided"], verdicts=()))
    plan = _load(tmp_path, _plan_doc("two-sided"))
    with pytest.raises(
        ValueError, match=r"rule two-sided gave verdict '(diff\.|n\.d\.)', not one of its labels"
    ):
        run_family(plan, ruled(plan.family("f")), table)


def test_family_result_round_trips_through_its_json(tmp_path, table):
    plan = _load(tmp_path, _plan_doc("tost", multiplicity="holm", margin=4))
    result = dataclasses.replace(run_family(plan, ruled(plan.family("f")), table), frozen_config_hash="abc")
    data = json.loads(json.dumps(result.to_json()))
    assert list(data)[-5:] == ["harness_version", "status", "missing", "rows", "frozen_config_hash"]
    assert data["status"] == "ran" and "deviation" not in data
    assert FamilyResult.from_json(data, "f.json") == result and result.status is Status.RAN
    with pytest.raises(InputError, match=r"f\.json: status 'done' is not one of ran, not run"):
        FamilyResult.from_json(data | {"status": "done"}, "f.json")
    with pytest.raises(InputError, match=r"f\.json: not a family's statistics; missing rows"):
        FamilyResult.from_json({k: v for k, v in data.items() if k != "rows"}, "f.json")
