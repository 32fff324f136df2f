"""Metric sets by canonical name, and scoring one question's ranking under one of them.

The set a dataset uses is its config's `metric_set`, declared in harness.config.metric_sets (the same keys as
METRIC_SETS here, which attaches how each set scores); its token budgets come from the config's `budgets:`
section (budgets_from_config); the cut-offs k are fixed by the set (docs/design.md, Evidence metrics).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from harness.data.model import Chunk, Question
from harness.errors import HarnessError, InputError
from harness.metrics import freshstack, qasper
from harness.metrics.budget import TokenCache, check_budget
from harness.metrics.ngrams import GramCache


@dataclass(frozen=True)
class MetricSet:
    name: str
    # the defaults of docs/design.md, Cells and budgets; a study registers its own in `budgets:`
    default_budgets: tuple[int, ...]
    ks: tuple[int, ...]
    score: Callable[..., list[tuple[str, float]]]
    budget_metrics: tuple[str, ...]  # name prefixes per budget, e.g. ("rec", "complete", "partial")
    budget_interleaved: bool  # prec@512t, rec@512t, prec@1024t, ... rather than all rec first
    k_metrics: tuple[str, ...]
    # the chunks (of a question's scope, in corpus order) that cover a unit of its gold on their own
    gold_chunks: Callable[[Question, Sequence[Chunk], GramCache], list[str]]
    tail: tuple[str, ...] = ()
    # answer-level outcomes, one per token budget (`answer_f1@512t`): computed by their own stages (reader,
    # judge), not by score_question, but plans may register tests on them
    answer_metrics: tuple[str, ...] = ()
    # score_question with `assembly:` options (harness.config.lab.Assembly); None: the set declares no
    # assembly (harness.config.metric_sets)
    score_assembled: Callable[..., list[tuple[str, float]]] | None = None
    # what each metric measures, for the glossary (harness.report.glossary), keyed by `metric_form`: {B} is
    # the
    # budget with its unit ("512 tokens"), {k} the cut-off; a metric without one is named by the set alone
    descriptions: Mapping[str, str] = field(default_factory=dict)

    def metric_names(self, budgets: Sequence[int], suffix: str = "t") -> tuple[str, ...]:
        """The names score_question returns for these budgets, in the same order (suffix "w": word
        budgets)."""
        budgets = check_budgets(budgets, self.name)
        if self.budget_interleaved:
            by_budget = [f"{m}@{b}{suffix}" for b in budgets for m in self.budget_metrics]
        else:
            by_budget = [f"{m}@{b}{suffix}" for m in self.budget_metrics for b in budgets]
        return tuple(by_budget + [f"{m}@{k}" for m in self.k_metrics for k in self.ks] + list(self.tail))


def _evidence_string_chunks(question: Question, chunks: Sequence[Chunk], grams: GramCache) -> list[str]:
    gold = qasper.gold_strings(question, grams)
    return [c.chunk_id for c in chunks if any(qasper.retrieved_flags(gold, [grams.get(c.text)]))]


def _gold_section_chunks(question: Question, chunks: Sequence[Chunk], grams: GramCache) -> list[str]:
    gold = freshstack.gold_grams(question, grams)
    out = []
    for c in chunks:
        cg = grams.get(c.text).grams
        if freshstack.is_relevant(cg, cg & gold):
            out.append(c.chunk_id)
    return out


def _qasper_assembled(question: Question, ranked_chunks: Sequence[Chunk], budgets: Sequence[int],
                      ks: Sequence[int], *, tokens: TokenCache, grams: GramCache,
                      assembly: Any) -> list[tuple[str, float]]:
    return qasper.score_qasper_assembled(question, ranked_chunks, budgets, ks, tokens=tokens, grams=grams,
                                         unit=assembly.unit, overflow=assembly.overflow,
                                         novelty=assembly.novelty)


METRIC_SETS: dict[str, MetricSet] = {
    "qasper": MetricSet(
        name="qasper",
        default_budgets=qasper.BUDGETS,
        ks=qasper.KS,
        score=qasper.score_qasper,
        budget_metrics=("rec", "complete", "partial"),
        budget_interleaved=False,
        k_metrics=("rec", "hit"),
        gold_chunks=_evidence_string_chunks,
        answer_metrics=("answer_f1",),
        score_assembled=_qasper_assembled,
        descriptions={
            "rec@B": "the share of a question's gold evidence strings found in the first {B} of retrieved "
                     "source "
            "text",
            "complete@B": "1 when every gold evidence string of the question is found in the first {B} "
                          "retrieved, "
            "else 0 (a mean over questions: the share answered in full)",
            "partial@B": "1 when at least one gold evidence string is found in the first {B} retrieved, else "
                         "0",
            "rec@k": "the share of a question's gold evidence strings found in the top {k} chunks",
            "hit@k": "1 when some gold evidence string is found in the top {k} chunks, else 0",
            "answer_f1@B": "word-overlap F1 of the fixed reader's answer, given the first {B} retrieved, "
                           "against "
            "the gold answers",
        },
    ),
    "freshstack": MetricSet(
        name="freshstack",
        default_budgets=freshstack.BUDGETS,
        ks=freshstack.KS,
        score=freshstack.score_freshstack,
        budget_metrics=("prec", "rec"),
        budget_interleaved=True,
        k_metrics=("hit",),
        gold_chunks=_gold_section_chunks,
        tail=(f"mrr@{freshstack.MRR_DEPTH}",),
        answer_metrics=("nugget_recall",),
        descriptions={
            "prec@B": "the share of the word 5-grams in the first {B} retrieved that belong to the gold "
                      "sections",
            "rec@B": "the share of the gold sections' word 5-grams found in the first {B} retrieved",
            "hit@k": "1 when a relevant chunk (half its 5-grams gold) is in the top {k}, else 0",
            "mrr@k": "1 / the rank of the first relevant chunk within the top {k} (0 when none)",
            "nugget_recall@B": "the share of the question's answer nuggets a judge finds in the fixed "
                               "reader's "
            "answer, given the first {B} retrieved",
        },
    ),
}


def metric_form(metric: str) -> str:
    """A metric name with its budget or cut-off generalised, the key of `MetricSet.descriptions`:
    rec@512t and rec@120w -> rec@B, hit@5 and mrr@10 -> hit@k and mrr@k; any other name as it is."""
    stem, at, size = metric.partition("@")
    if at and size[:-1].isdigit() and size[-1:] in ("t", "w"):
        return f"{stem}@B"
    return f"{stem}@k" if at and size.isdigit() else metric


def is_answer_level(metric: str) -> bool:
    """Measured by the answer stage (answer_f1@B, nugget_recall@B), so behind the reader's controls."""
    return metric.partition("@")[0] in {m for ms in METRIC_SETS.values() for m in ms.answer_metrics}


def known_metric_names(metric_set: str, budgets: Sequence[int], suffix: str = "t") -> tuple[str, ...]:
    """Every metric name a dataset of this set can have results for: retrieval metrics, then answer-level."""
    ms = get_metric_set(metric_set)
    budgets = check_budgets(budgets, ms.name)
    answers = tuple(f"{m}@{b}{suffix}" for m in ms.answer_metrics for b in budgets)
    return ms.metric_names(budgets, suffix) + answers


@dataclass
class ScoringCache:
    """Token ids and 5-gram sets per distinct source text; share one across a whole scoring run."""

    tokens: TokenCache = field(default_factory=TokenCache)
    grams: GramCache = field(default_factory=GramCache)


def get_metric_set(name: str) -> MetricSet:
    try:
        return METRIC_SETS[name]
    except (KeyError, TypeError):
        raise InputError(f"unknown metric_set {name!r}; choose one of {sorted(METRIC_SETS)}") from None


def check_budgets(budgets: Sequence[int], metric_set: str) -> tuple[int, ...]:
    """Budgets as a sorted tuple; empty, non-positive or repeated budgets are refused."""
    if isinstance(budgets, (str, bytes)) or not isinstance(budgets, Sequence) or not budgets:
        raise InputError(
            f"budgets for metric_set {metric_set!r} must be a non-empty list of token counts, got {budgets!r}"
        )
    checked = [check_budget(b) for b in budgets]
    if len(set(checked)) != len(checked):
        raise InputError(f"budgets for metric_set {metric_set!r} repeat a value: {list(budgets)}")
    return tuple(sorted(checked))


def budgets_from_config(budgets_section: Mapping[str, Any] | None, metric_set: str) -> tuple[int, ...]:
    """The budgets a study registered for a metric set (configs/study.yaml `budgets: {set: [...]}`)."""
    get_metric_set(metric_set)
    if not isinstance(budgets_section, Mapping) or metric_set not in budgets_section:
        raise HarnessError(
            f"configs/study.yaml: `budgets.{metric_set}` is missing; register the token budgets, "
            f"e.g. budgets: {{{metric_set}: {list(METRIC_SETS[metric_set].default_budgets)}}}"
        )
    try:
        return check_budgets(budgets_section[metric_set], metric_set)
    except ValueError as e:
        raise HarnessError(f"configs/study.yaml: `budgets.{metric_set}`: {e}") from None


def score_question(
    metric_set: str,
    question: Question,
    ranked_chunks: Sequence[Chunk],
    budgets: Sequence[int],
    *,
    cache: ScoringCache | None = None,
    assembly: Any = None,
) -> list[tuple[str, float]]:
    """(metric name, value) pairs for one question's ranking, each name once, in metric_names order.

    ranked_chunks is the full ranking, best first; only its head (enough for the largest budget and the
    deepest k) is read. Pass one `cache` for a whole scoring run so each chunk is encoded once.
    `assembly` (harness.config.lab.Assembly, None: today's token cut) chooses how budgets are filled.
    """
    ms = get_metric_set(metric_set)
    budgets = check_budgets(budgets, ms.name)
    cache = cache if cache is not None else ScoringCache()
    if assembly is not None and not assembly.is_default:
        if ms.score_assembled is None:
            assembling = ", ".join(n for n, s in METRIC_SETS.items() if s.score_assembled is not None)
            raise HarnessError(f"assembly options apply to the {assembling} metric set only, not {ms.name!r}")
        return ms.score_assembled(question, ranked_chunks, budgets, ms.ks, tokens=cache.tokens,
                                  grams=cache.grams, assembly=assembly)
    return ms.score(question, ranked_chunks, budgets, ms.ks, tokens=cache.tokens, grams=cache.grams)
