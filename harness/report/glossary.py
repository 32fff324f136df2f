"""The glossary, generated from the registries: arm kinds, retriever types, metrics, decision rules, verdicts,
tiers and instruments, each described where it is declared (a `description` beside the entry); an entry
without one is still listed, with what its registry knows. docs/glossary.md is `glossary_markdown()` of
the registries alone (`harness glossary --out docs/glossary.md`); a report's Glossary section is the study's
own names (its tests, datasets, arms, retrievers and metrics) followed by the same fixed groups.
"""

from __future__ import annotations

from typing import Iterable

from harness.config.arm_kinds import ARM_KINDS, ArmKindSpec
from harness.config.retrievers import RETRIEVER_TYPES, RetrieverTypeSpec, retriever_spec
from harness.errors import HarnessError
from harness.metrics.registry import METRIC_SETS, MetricSet, metric_form
from harness.plan.schema import TIER_MEANINGS, TIERS
from harness.report.context import ReportContext
from harness.report.findings import SATURATED, Wording
from harness.report.model import Definition, Section
from harness.report.sections_outcomes import TIER_NAMES
from harness.stats.decided import INSTRUMENT_MEANINGS
from harness.stats.rules import RULES, verdict_labels
from harness.stats.verdicts import VERDICT_MEANINGS

TESTS, DATASETS, ARMS, RETRIEVERS, METRICS = "Registered tests", "Datasets", "Arms", "Retrievers", "Metrics"
ARM_KIND_GROUP, RETRIEVER_TYPE_GROUP = "Arm kinds", "Retriever types"
RULE_GROUP, VERDICTS, TIER_GROUP, INSTRUMENTS, WORDS = (
    "Decision rules",
    "Verdicts",
    "Tiers",
    "Instruments",
    "Words",
)

# the report's own vocabulary: (term, text, is a code). Codes are linked wherever they appear on the first
# screen; words at their first appearance in a sentence.
REPORT_WORDS = (
    (
        "points",
        "differences are in points: metric values (0 to 1) times 100, so +5 points means A scores "
        "0.05 higher than B on average",
        False,
    ),
    (
        "CI",
        "confidence interval of A - B from the BCa cluster bootstrap; a rule reads the 90% CI (TOST) or the "
        "95% CI",
        True,
    ),
    (
        "BCa",
        "bias-corrected and accelerated bootstrap: clusters are resampled with replacement and the "
        "interval corrected for bias and skew (docs/design.md)",
        True,
    ),
    (
        "cluster",
        "the unit the statistics resample (e.g. all questions on one paper): more clusters, not more "
        "questions per cluster, narrow the CI",
        False,
    ),
    (
        "margin",
        "the equivalence margin: how far apart (in points) A and B may be and still count as "
        "equivalent, registered before any outcome",
        False,
    ),
    (
        "MDD",
        "minimum detectable difference: the true difference a test of this size and spread would call "
        "diff. with 80% probability at the plan's alpha",
        True,
    ),
    (
        "sign-flip p",
        "the p-value of the cluster sign-flip test of A - B = 0 (every cluster's sign flipped at "
        "random), which two-sided families may require beside the CI",
        True,
    ),
    (
        "Holm",
        "the Holm step-down adjustment of a family's decisive p-values for testing several hypotheses",
        True,
    ),
    (
        "TOST",
        "two one-sided tests: equivalence within the margin, shown when the 90% CI lies inside it",
        True,
    ),
    ("alpha", "the plan's significance level (0.05 unless it says otherwise)", False),
    (
        "family",
        "the plan's group of tests sharing a question, a decision rule, a tier and a Holm adjustment",
        False,
    ),
    (
        "tier",
        "what a family's verdicts may be read as: confirmatory, pre-specified secondary or exploratory",
        False,
    ),
    (
        "instrument check",
        "the acceptance controls a reader or judge must pass before the tests resting on it "
        "count (the Instruments section)",
        False,
    ),
    (
        "budget",
        "how much retrieved source text a metric reads: chunks in rank order, the last one cut at the "
        "budget (512t: 512 cl100k tokens; w: words)",
        False,
    ),
    (
        "spending guide",
        "the report's last section: every registered choice ranked by what it returned",
        False,
    ),
)


def arm_kind_text(kind: ArmKindSpec) -> str:
    """Its description, else what the declaration says: boundaries, calls, what it starts from."""
    if kind.description:
        return kind.description
    parts = [f"starts from the {kind.boundaries} chunks"]
    if kind.derived:
        parts = ["starts from another arm's built chunks (`of:`)"]
    calls = [f"{kind.calls_per_chunk} LLM call(s) per chunk"] if kind.calls_per_chunk else []
    calls += [f"{kind.calls_per_document} LLM call(s) per document"] if kind.calls_per_document else []
    parts += calls or ["no LLM call"]
    if kind.expansion:
        parts.append(f"expanded at retrieval time ({kind.expansion})")
    if kind.planned:
        parts.append("planned, not yet buildable")
    return "arm kind: " + "; ".join(parts)


def arm_kind_short(kind: ArmKindSpec) -> str | None:
    """The short name a sentence spells an arm out by: its description up to the first colon."""
    return kind.description.partition(":")[0] if kind.description else None


def retriever_type_text(name: str, spec: RetrieverTypeSpec) -> str:
    if spec.description:
        return spec.description
    said = [f"retriever type `{name}`"]
    said += ["ranks with a model of its own"] if spec.loads_model else []
    said += ["ranks with chunk vectors"] if spec.embeds else []
    said += [f"combines the retrievers named in {', '.join(spec.members)}"] if spec.members else []
    return "; ".join(said)


def metric_text(set_name: str, metric: str) -> str:
    """What `metric` (a concrete name, rec@512t, or a form, rec@B) measures under the metric set."""
    ms = METRIC_SETS[set_name]
    form = metric_form(metric)
    template = ms.descriptions.get(form)
    if template is None:
        return f"a metric of the {set_name} set"
    size = metric.partition("@")[2]
    if form.endswith("@B"):
        budget = "B tokens (or words)" if size == "B" else \
            f"{size[:-1]} {'words' if size.endswith('w') else 'tokens'}"
        return template.format(B=budget)
    return template.format(k=size)


def metric_forms(ms: MetricSet) -> list[str]:
    """Every metric form the set declares, in its declaration order."""
    forms = [f"{m}@B" for m in ms.budget_metrics] + [f"{m}@k" for m in ms.k_metrics]
    forms += [metric_form(t) for t in ms.tail] + [f"{m}@B" for m in ms.answer_metrics]
    return list(dict.fromkeys(forms))


def verdict_text(label: str) -> str:
    if label in VERDICT_MEANINGS:
        return VERDICT_MEANINGS[label]
    rules = [r.name for r in RULES.values() if label in r.verdicts]
    return f"a verdict of the {', '.join(rules)} rule" if rules else "a verdict label"


def fixed_groups() -> list[Definition]:
    """The groups every glossary ends with: rules, verdicts, tiers, instruments and the report's words."""
    out = [Definition(RULE_GROUP, name, r.caption(True)) for name, r in RULES.items()]
    out += [Definition(VERDICTS, label, verdict_text(label)) for label in verdict_labels()]
    out += [Definition(TIER_GROUP, TIER_NAMES.get(t, t), TIER_MEANINGS.get(t, "a tier of the plan"))
            for t in TIERS]
    out += [Definition(INSTRUMENTS, name, text, code=False) for name, text in INSTRUMENT_MEANINGS.items()]
    out += [Definition(WORDS, term, text, code=code) for term, text, code in REPORT_WORDS]
    return out


def registry_glossary() -> list[Definition]:
    """Every declared arm kind, retriever type and metric, then the fixed groups: docs/glossary.md."""
    out = [Definition(ARM_KIND_GROUP, k.name, arm_kind_text(k)) for k in ARM_KINDS.values()]
    out += [Definition(RETRIEVER_TYPE_GROUP, name, retriever_type_text(name, spec))
            for name, spec in RETRIEVER_TYPES.items()]
    for set_name, ms in METRIC_SETS.items():
        out += [Definition(f"{METRICS} ({set_name})", form, metric_text(set_name, form))
                for form in metric_forms(ms)]
    return out + fixed_groups()


def glossary_markdown(definitions: Iterable[Definition] | None = None) -> str:
    """docs/glossary.md: the registries' glossary as Markdown (one list per group)."""
    lines = [
        "# Glossary",
        "",
        "Generated from the registries by `harness glossary --out docs/glossary.md` (do not edit by hand): "
        "each entry is the `description` declared beside it, or what its registry says where it has none. "
        "A study's report carries its own glossary, with its tests, datasets, arms and retrievers.",
        "",
    ]
    lines += _markdown_groups(registry_glossary() if definitions is None else list(definitions), level="##")
    return "\n".join(lines).rstrip() + "\n"


def _markdown_groups(definitions: list[Definition], *, level: str) -> list[str]:
    lines: list[str] = []
    group = None
    for d in definitions:
        if d.group != group:
            lines += ([""] if group is not None else []) + [f"{level} {d.group}", ""]
            group = d.group
        lines.append(f"- **{d.term}**: {d.text}")
    return lines


def markdown_section(definitions: list[Definition]) -> list[str]:
    """The report.md form of a Glossary section's entries (its groups one heading level down)."""
    return _markdown_groups(definitions, level="###")


# --- a study's glossary ---


def sentence_wording(ctx: ReportContext) -> Wording:
    """How the summary's sentences spell the study's arms and metrics out."""
    arms = {}
    for name, cfg in ctx.study.arms.items():
        kind = ARM_KINDS.get(cfg.kind)
        short = arm_kind_short(kind) if kind is not None else None
        if short:
            arms[name] = short
    metrics = {}
    for dataset, test_metric in _plan_metrics(ctx):
        metrics[dataset, test_metric] = metric_text(
            ctx.study.config.datasets[dataset].metric_set, test_metric
        )
    return Wording(arms, metrics, _context_costs(ctx), saturated_metrics(ctx))


def saturated_metrics(ctx: ReportContext) -> dict[tuple[str, str, str, str], tuple[str, float]]:
    """(dataset, arm, retriever, metric) -> ("ceiling" or "floor", share) for every tested metric that sits
    at 1 or at 0 for most of an arm's questions (findings.SATURATED)."""
    table = ctx.per_question
    if ctx.plan is None or table is None or table.empty:
        return {}
    tested = {(t.dataset, arm, retriever, t.metric) for fam in ctx.plan.families for t in fam.tests
              for arm, retriever in ((t.a, t.retriever), (t.b, t.retriever_b or t.retriever))}
    keys = ["dataset", "arm", "retriever", "metric"]
    rows = table[table.set_index(keys).index.isin(list(tested))]
    out = {}
    for key, values in rows.groupby(keys, sort=True)["value"]:
        for bound, value in (("ceiling", 1.0), ("floor", 0.0)):
            share = float((values == value).mean())
            if share > SATURATED:
                out[tuple(str(k) for k in key)] = (bound, share)
    return out


def _context_costs(ctx: ReportContext) -> dict[tuple[str, str], str]:
    """What each tested arm puts in front of a reader: chunks per document and tokens per chunk, from the
    chunk-set statistics (an arm without a built chunk set of its own, e.g. an expansion, has none)."""
    if ctx.plan is None:
        return {}
    pairs = dict.fromkeys(
        (t.dataset, arm) for fam in ctx.plan.families for t in fam.tests for arm in (t.a, t.b)
    )
    costs = {}
    for dataset, arm in pairs:
        loaded = ctx.datasets.get(dataset)
        if loaded is None or not loaded.documents:
            continue
        try:
            s = ctx.chunk_stats(dataset, arm)
        except (HarnessError, KeyError):
            continue
        costs[dataset, arm] = (f"{s.chunks / len(loaded.documents):.1f} chunks per document, "
                               f"{s.mean_tokens:.0f} tokens each")
    return costs


def _plan_metrics(ctx: ReportContext) -> list[tuple[str, str]]:
    if ctx.plan is None:
        return []
    pairs = [(t.dataset, t.metric) for fam in ctx.plan.families for t in fam.tests]
    return [p for p in dict.fromkeys(pairs) if p[0] in ctx.study.config.datasets]


def study_glossary(ctx: ReportContext) -> list[Definition]:
    """The study's names (its registered tests, datasets, arms, retrievers, the metrics its tests read), then
    the fixed groups."""
    out = []
    if ctx.plan is not None:
        for fam in ctx.plan.families:
            for t in fam.tests:
                margin = f", margin ±{t.margin:g} points" if t.margin is not None else ""
                out.append(
                    Definition(
                        TESTS,
                        t.id,
                        f"{TIER_NAMES.get(fam.tier, fam.tier)} test of family {fam.id} "
                        f"({fam.description.rstrip()}): A = {t.a}, B = {t.b} on {t.dataset} under "
                        f"{t.retriever}{' and ' + t.retriever_b if t.retriever_b else ''}, by "
                        f"{t.metric}; rule {t.rule}{margin}",
                    )
                )
    for name, ds in ctx.study.config.datasets.items():
        loaded = ctx.datasets.get(name)
        size = "" if loaded is None else \
            f"; {len(loaded.questions)} questions in {len({q.cluster for q in loaded.questions})} clusters"
        out.append(Definition(DATASETS, name, f"dataset read by the {ds.adapter} adapter, scored with the "
                              f"{ds.metric_set} metrics{size}"))
    for name, cfg in ctx.study.arms.items():
        kind = ARM_KINDS.get(cfg.kind)
        text = arm_kind_text(kind) if kind is not None else f"an arm of kind {cfg.kind}"
        if name != cfg.kind:
            text = f"an arm of kind {cfg.kind}: {text}"
        of = getattr(cfg, "of", None)
        out.append(Definition(ARMS, name, text + (f" (built from {of})" if of else "")))
    for name, cfg in ctx.study.retrievers.items():
        spec = retriever_spec(cfg)
        members = spec.member_names(cfg)
        text = retriever_type_text(cfg.type, spec) if name == cfg.type else \
            f"a {cfg.type} retriever: {retriever_type_text(cfg.type, spec)}"
        out.append(
            Definition(RETRIEVERS, name, text + (f"; ranks with {', '.join(members)}" if members else ""))
        )
    by_metric: dict[str, list[str]] = {}
    for dataset, metric in _plan_metrics(ctx):
        text = metric_text(ctx.study.config.datasets[dataset].metric_set, metric)
        seen = by_metric.setdefault(metric, [])
        if text not in seen:
            seen.append(text)
    out += [Definition(METRICS, m, "; or ".join(texts)) for m, texts in by_metric.items()]
    return out + fixed_groups()


def glossary(ctx: ReportContext) -> Section:
    """The report's Glossary section: every code on the first screen links here."""
    sec = Section("glossary", "Glossary")
    sec.paragraphs.append("Every code in the summary links to its entry here. Descriptions come from the "
                          "harness's registries (docs/glossary.md lists every declared entry).")
    sec.definitions += study_glossary(ctx)
    return sec
