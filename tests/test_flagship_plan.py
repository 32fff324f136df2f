"""The flagship plan and amendments register what the paper registered (reference: the confirmatory paper,
sections 4.1-4.7, Table 2, Table 5 and Amendments 1-4). The expected table below is written from the
paper, not from the YAML, so any drift between the two fails here."""

from pathlib import Path

import pytest

from harness.config.arm_kinds import is_planned
from harness.provenance.plan_check import check_plan_against_config
from harness.plan.load import load_plan
from harness.study import Study

ROOT = Path(__file__).resolve().parents[1]

Q, F = "qasper", "freshstack"
REC, PREC, AF1, NUG = "rec@512t", "prec@1024t", "answer_f1@512t", "nugget_recall@1024t"
MARGIN = {Q: 5.0, F: 4.0}
METRIC = {Q: REC, F: PREC}


def _cells(a, b, retriever, rule, datasets=(Q, F), metric=None, margin=None):
    """(a, b, retriever, dataset, metric, rule, margin) per dataset; margins from the dataset unless given."""
    out = []
    for d in datasets:
        m = None if rule == "two-sided" else (margin if margin is not None else MARGIN[d])
        out.append((a, b, retriever, d, metric or METRIC[d], rule, m))
    return out


# family -> (tier, multiplicity, registered in, tests), from the paper
EXPECTED = {
    # 4.5: H1 (E vs S+T) and H2 (E vs CR), hybrid, 7B, each dataset: four TOSTs, margins ±5 / ±4, Holm
    "primary": (
        "confirmatory",
        "holm",
        "plan",
        _cells("E", "S+T", "hybrid", "tost")[:1]
        + _cells("E", "CR", "hybrid", "tost")[:1]
        + _cells("E", "S+T", "hybrid", "tost")[1:]
        + _cells("E", "CR", "hybrid", "tost")[1:],
    ),
    # 4.5: S vs F512c and S vs F256t, both datasets, two-sided, Holm over 4
    "H3": (
        "confirmatory",
        "holm",
        "plan",
        [
            _cells("S", "F512c", "hybrid", "two-sided")[0],
            _cells("S", "F256t", "hybrid", "two-sided")[0],
            _cells("S", "F512c", "hybrid", "two-sided")[1],
            _cells("S", "F256t", "hybrid", "two-sided")[1],
        ],
    ),
    # Appendix J deviation 8: the five tests; CRs is Qasper only; answer F1 ±5 F1 (Table 5)
    "key_secondary": (
        "secondary",
        "holm",
        "plan",
        _cells("Es", "S+T", "hybrid", "tost")
        + _cells("Es", "CRs", "hybrid", "tost", datasets=(Q,))
        + [("E", "S+T", "hybrid", Q, AF1, "tost", 5.0), ("E", "CR", "hybrid", Q, AF1, "tost", 5.0)],
    ),
    # 5.1: S vs P and S vs FL (secondary)
    "controls": (
        "secondary",
        "none",
        "plan",
        [
            _cells("S", "P", "hybrid", "two-sided")[0],
            _cells("S", "FL", "hybrid", "two-sided")[0],
            _cells("S", "P", "hybrid", "two-sided")[1],
            _cells("S", "FL", "hybrid", "two-sided")[1],
        ],
    ),
    # 5.1: per-domain FreshStack H1 (secondary)
    "H1_domains": ("secondary", "none", "plan", [("E", "S+T", "hybrid", F, PREC, "two-sided", None)] * 3),
    # 4.1/4.3: the plan's secondary retrievers, H1/H2 margins on unadjusted 95% CIs
    "retrievers": (
        "secondary",
        "none",
        "plan",
        [
            c
            for d in (Q, F)
            for r in ("bm25", "mxbai", "qwen3")
            for c in (
                _cells("E", "S+T", r, "ci95-within-margin", datasets=(d,))
                + _cells("E", "CR", r, "ci95-within-margin", datasets=(d,))
            )
        ],
    ),
    # section 6, registered secondary analyses: H1 with a paraphrased prompt and over repeat generations,
    # judged as the secondary retrievers are
    "robustness_runs": (
        "secondary",
        "none",
        "plan",
        _cells("E-para", "S+T", "hybrid", "ci95-within-margin")
        + _cells("E-rep", "S+T", "hybrid", "ci95-within-margin"),
    ),
    "exploratory": (
        "exploratory",
        "none",
        "plan",
        _cells("S+T", "S", "hybrid", "two-sided")
        + [
            c
            for d in (Q, F)
            for c in (
                _cells("E", "S+T", "nomic", "two-sided", datasets=(d,))
                + _cells("E", "CR", "nomic", "two-sided", datasets=(d,))
            )
        ],
    ),
    # Appendix J: section 6 of the plan document planned pooled-corpus Qasper and field ablations of E
    "pooled_qasper": (
        "secondary",
        "none",
        "plan",
        [
            (a, b, "hybrid", "qasper-pooled", REC, "ci95-within-margin", 5.0)
            for a, b in (("E", "S+T"), ("E", "CR"), ("S+T", "S"))
        ],
    ),
    "field_ablations": (
        "secondary",
        "none",
        "plan",
        [
            (f"E-{k}-{f}", "E", "hybrid", d, METRIC[d], "two-sided", None)
            for d in (Q, F)
            for k in ("no", "only")
            for f in ("title", "summary", "keywords", "questions")
        ],
    ),
    # Amendment 1's late chunking (section 5.3: "secondary"): S under late-pooled jina-v3 minus S under plain
    # jina-v3, each dataset; registered in the plan with its test now that a test can name two retrievers
    "late_chunking": ("secondary", "none", "plan", _cells("S", "S", "jina-late/jina", "two-sided")),
    # Amendment 1: BM25+qwen3 hybrid and the reranker, same rule as the plan's secondary retrievers
    "retrievers_a1": (
        "secondary",
        "none",
        "amendment 0001",
        [
            c
            for d in (Q, F)
            for r in ("hybrid-qwen3", "rerank")
            for c in (
                _cells("E", "S+T", r, "ci95-within-margin", datasets=(d,))
                + _cells("E", "CR", r, "ci95-within-margin", datasets=(d,))
            )
        ],
    ),
    # Amendment 1: FreshStack nugget recall, ±5 margin, behind the judge's acceptance controls
    "nugget_recall": (
        "secondary",
        "none",
        "amendment 0001",
        [("E", "S+T", "hybrid", F, NUG, "tost", 5.0), ("E", "CR", "hybrid", F, NUG, "tost", 5.0)],
    ),
    # Amendment 1: exploratory scaling arm on 30 Qasper papers
    "scaling": (
        "exploratory",
        "none",
        "amendment 0001",
        [
            ("E-235b", "E", "hybrid", Q, REC, "two-sided", None),
            ("E-235b", "Es", "hybrid", Q, REC, "two-sided", None),
        ],
    ),
    # Amendment 2 / Appendix E: H4a M-RM, H4b M-SM two-sided; H4c M-E, H4d E vs E-K TOST; family of eight
    "H4": (
        "secondary",
        "holm",
        "amendment 0002",
        [
            c
            for d in (Q, F)
            for c in (
                _cells("M", "RM", "hybrid", "two-sided", datasets=(d,))
                + _cells("M", "SM", "hybrid", "two-sided", datasets=(d,))
                + _cells("M", "E", "hybrid", "tost", datasets=(d,))
                + _cells("E", "E-K", "hybrid", "tost", datasets=(d,))
            )
        ],
    ),
    # Amendment 3: H5a E+KX - E, H5b E+KX - E+AX (four), H6 E - PF (TOST ±5, 100 Qasper papers)
    "H5": (
        "secondary",
        "holm",
        "amendment 0003",
        [
            c
            for d in (Q, F)
            for c in (
                _cells("E+KX", "E", "hybrid", "two-sided", datasets=(d,))
                + _cells("E+KX", "E+AX", "hybrid", "two-sided", datasets=(d,))
            )
        ],
    ),
    "H6": ("secondary", "holm", "amendment 0003", [("E", "PF", "hybrid", Q, REC, "tost", 5.0)]),
    "indexing": (
        "exploratory",
        "none",
        "amendment 0003",
        [
            c
            for d in (Q, F)
            for c in (
                _cells("E+keys", "E", "hybrid", "two-sided", datasets=(d,))
                + _cells("E+entities", "E", "hybrid", "two-sided", datasets=(d,))
            )
        ],
    ),
    # Amendment 4: H7 M - M-TP (two), E+SX exploratory
    "H7": ("secondary", "holm", "amendment 0004", _cells("M", "M-TP", "hybrid", "two-sided")),
    "expansion": (
        "exploratory",
        "none",
        "amendment 0004",
        [
            c
            for d in (Q, F)
            for c in (
                _cells("E+SX", "E", "hybrid", "two-sided", datasets=(d,))
                + _cells("E+SX", "E+AX", "hybrid", "two-sided", datasets=(d,))
            )
        ],
    ),
}

# Amendment contents and timing (Appendix J): A1 before any outcome; A2-A4 after H1-H3 had been viewed
AMENDMENTS = {
    "0001": (True, {"E-235b"}, {"hybrid-qwen3", "rerank"}, {"retrievers_a1", "nugget_recall", "scaling"}),
    "0002": (False, {"M", "RM", "SM", "E-K", "E-K+M"}, set(), {"H4"}),
    "0003": (False, {"E+KX", "E+AX", "PF", "E+keys", "E+entities"}, set(), {"H5", "H6", "indexing"}),
    "0004": (False, {"M-TP", "E+SX"}, set(), {"H7", "expansion"}),
}


@pytest.fixture(scope="module")
def plan():
    return load_plan(ROOT / "plan" / "plan.yaml", ROOT / "amendments")


def _as_rows(family):
    return [
        (
            t.a,
            t.b,
            t.retriever if t.retriever_b is None else f"{t.retriever}/{t.retriever_b}",
            t.dataset,
            t.metric,
            t.rule,
            t.margin,
        )
        for t in family.tests
    ]


def test_every_family_and_no_other(plan):
    assert [f.id for f in plan.families] == list(EXPECTED)


@pytest.mark.parametrize("family_id", list(EXPECTED))
def test_family_matches_the_paper(plan, family_id):
    tier, multiplicity, source, tests = EXPECTED[family_id]
    family = plan.family(family_id)
    assert (family.tier, family.multiplicity, family.source) == (tier, multiplicity, source)
    assert _as_rows(family) == tests


def test_holm_family_sizes(plan):
    sizes = {f.id: len(f.tests) for f in plan.families if f.multiplicity == "holm"}
    assert sizes == {"primary": 4, "H3": 4, "key_secondary": 5, "H4": 8, "H5": 4, "H6": 1, "H7": 2}


def test_signflip_requirement_follows_section_4_5(plan):
    # H3 and the add-on families need the Holm-adjusted sign-flip p; primary and key-secondary do not
    needs = {f.id for f in plan.families if f.multiplicity == "holm" and f.signflip_required}
    assert needs == {"H3", "H4", "H5", "H7"}


def test_subsets_domains_and_scaling(plan):
    domains = [t.subset.strata for t in plan.family("H1_domains").tests]
    assert domains == [("laravel",), ("angular",), ("yolo",)]
    assert [t.id for t in plan.family("H1_domains").tests] == ["H1-laravel", "H1-angular", "H1-yolo"]
    h6 = plan.family("H6").tests[0].subset
    assert (h6.n_clusters, h6.allow_shortfall) == (100, False)
    for test in plan.family("scaling").tests:
        assert (test.subset.n_clusters, test.subset.allow_shortfall) == (30, True)


def test_nugget_recall_needs_its_judge_controls(plan):
    for test in plan.family("nugget_recall").tests:
        assert (test.acceptance.positive_min, test.acceptance.negative_max) == (0.85, 0.05)


def test_key_secondary_ids(plan):
    assert [t.id for t in plan.family("key_secondary").tests] == [
        "H1s-qasper", "H1s-freshstack", "H2s-qasper", "H1-answer-qasper", "H2-answer-qasper"]


def test_retrievers_and_arms(plan):
    assert plan.retrievers == (
        "bm25",
        "nomic",
        "mxbai",
        "qwen3",
        "hybrid",
        "jina",
        "jina-late",
        "hybrid-qwen3",
        "rerank",
    )
    assert plan.datasets["qasper"].margin == 5 and plan.datasets["freshstack"].margin == 4
    assert plan.datasets["freshstack"].stratified and not plan.datasets["qasper"].stratified


@pytest.mark.parametrize("amendment_id", list(AMENDMENTS))
def test_amendment_contents_and_timing(plan, amendment_id):
    before, arms, retrievers, families = AMENDMENTS[amendment_id]
    amendment = next(a for a in plan.amendments if a.id == amendment_id)
    assert amendment.before_outcomes is before
    assert set(amendment.arms) == arms
    assert set(amendment.retrievers) == retrievers
    assert set(amendment.families) == families


def test_flagship_plan_validates_against_its_config():
    study = Study.at(ROOT)
    plan = check_plan_against_config(study)
    named = {arm for f in plan.families for t in f.tests for arm in (t.a, t.b)}
    assert named <= set(study.arms)
    declared_only = {a for a, cfg in study.arms.items() if is_planned(cfg)}
    assert declared_only == set()  # every arm the plan names is buildable


def test_flagship_robustness_arms():
    """E-para differs from E only in its enrichment prompt; E-rep samples (repeats need it) three times."""
    study = Study.at(ROOT)
    para, rep, e = study.arms["E-para"], study.arms["E-rep"], study.arms["E"]
    assert (
        para.prompts == {"enrich": "enrich_paraphrase.txt"}
        and (study.prompts_dir / "enrich_paraphrase.txt").is_file()
    )
    assert (para.model, para.model_options, para.datasets) == (e.model, e.model_options, e.datasets)
    assert rep.repeats == 3 and rep.model_options["temperature"] == 0.7 and rep.prompts is None


def test_flagship_config_model_limits_and_spend_cap():
    from harness.arms.model_limits import effective_model_config
    from harness.config import to_plain

    study = Study.at(ROOT)

    def limits(arm, dataset):
        cfg = study.arms[arm]
        return to_plain(
            effective_model_config(arm, cfg, study.models[cfg.model], dataset, study.config.datasets)
        )

    assert (limits("E", "qasper")["num_ctx"], limits("E", "qasper")["num_predict"]) == (16384, 1000)
    assert (limits("CR", "qasper")["num_ctx"], limits("CR", "qasper")["num_predict"]) == (16384, 120)
    assert (limits("CR", "freshstack")["num_ctx"], limits("CR", "freshstack")["num_predict"]) == (32768, 120)
    assert limits("Es", "qasper")["max_tokens"] == 2000 and limits("CRs", "qasper")["max_tokens"] == 600
    assert study.arms["CRs"].datasets == ("qasper",)
    assert study.config.llm.spend_cap_usd == 5.5
