"""The shape of plan/plan.yaml and of an amendment, as sections of `setting` fields (harness.plan.checks).

What the fields mean together (a test's arms are registered, its rule takes a margin, ...) is checked
after the shape, by harness.plan.load.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from harness.config.fields import ValueCheck, Flag, Int, Number, Where, setting
from harness.config.names import NAME
from harness.plan.analyses import Entries, EntrySpec
from harness.plan.checks import ABSENT, Choice, Items, Name, NameMap, Names, Part, Timestamp
from harness.plan.rules import RULE_TERMS

TIERS = ("confirmatory", "secondary", "exploratory")
# what a family's tier lets a reader conclude (the glossary, harness.report.glossary)
TIER_MEANINGS = {
    "confirmatory": "the study's registered questions: a verdict here is a finding",
    "secondary": "registered before outcomes and decided by a rule, supporting the confirmatory tests rather "
                 "than answering the study's question",
    "exploratory": "not a registered conclusion: a test outside the plan, or one whose instrument failed its "
                   "acceptance controls; it suggests what to test next",
}
MULTIPLICITY = ("holm", "none")
BOOTSTRAP_METHODS = ("bca-cluster",)
PERMUTATION_METHODS = ("cluster-sign-flip",)
# bounds of the numbers a plan (and `harness compare`) may give (docs/pipeline.md, "Names and numbers"):
# a million resamples or sign flips is far past any precision a study needs, and still runs in seconds
MAX_RESAMPLES = 1_000_000
MAX_FLIPS = 1_000_000
MAX_MARGIN = 100.0  # margins are in points, and a difference of metrics in [0, 1] lies within 100 points


@dataclass(frozen=True)
class BootstrapSpec:
    method: str = setting(check=Choice(BOOTSTRAP_METHODS))
    resamples: int = setting(check=Int(2, MAX_RESAMPLES))


@dataclass(frozen=True)
class PermutationSpec:
    method: str = setting(check=Choice(PERMUTATION_METHODS))
    max_flips: int = setting(check=Int(1, MAX_FLIPS))


@dataclass(frozen=True)
class ReaderAcceptanceSpec:
    positive_min: float = setting(check=Number())
    negative_max: float = setting(check=Number())


@dataclass(frozen=True)
class PlanDatasetSpec:
    primary_metric: str = setting(check=Name())
    cluster: str = setting(check=Name())
    stratified: bool = setting(check=Flag())
    margin: float = setting(check=Number())
    metrics: tuple[str, ...] = setting(check=Names())
    # the reader's control thresholds on this dataset's answer metric; freeze requires them once an
    # answer-level test names the dataset (harness.provenance.plan_check)
    reader_acceptance: ReaderAcceptanceSpec | None = setting(None, Part(ReaderAcceptanceSpec))


@dataclass(frozen=True)
class SubsetSpec:
    n_clusters: int = setting(ABSENT, Int(1))
    seed: int = setting(ABSENT, Int(0))
    strata: tuple[str, ...] = setting(ABSENT, Names())
    allow_shortfall: bool = setting(ABSENT, Flag())


@dataclass(frozen=True)
class AcceptanceSpec:
    judge: str = setting(check=Name())
    positive_min: float = setting(check=Number())
    negative_max: float = setting(check=Number())


@dataclass(frozen=True)
class TestSpec:
    id: str = setting(check=NAME)
    a: str = setting(check=Name())
    b: str = setting(check=Name())
    retriever: str = setting(check=Name())
    dataset: str = setting(check=Name())
    metric: str = setting(check=Name())
    margin: Any = setting(ABSENT)  # checked against the test's rule
    subset: SubsetSpec | None = setting(None, Part(SubsetSpec))
    family: Any = setting(None)  # an amendment's test: the family it joins
    rule: Any = setting(ABSENT)  # absent: the family's rule
    acceptance: AcceptanceSpec | None = setting(None, Part(AcceptanceSpec))
    retriever_b: str | None = setting(None, Name())


@dataclass(frozen=True)
class DecisionSpec:
    rule: str = setting(check=Choice(lambda: tuple(RULE_TERMS)))
    signflip_required: bool = setting(check=Flag())


@dataclass(frozen=True)
class FamilySpec:
    id: str = setting(check=NAME)
    tier: str = setting(check=Choice(TIERS))
    multiplicity: str = setting(check=Choice(MULTIPLICITY))
    decision: DecisionSpec = setting(check=Part(DecisionSpec))
    seed: int = setting(check=Int(0))
    description: str = setting(check=Name())
    tests: tuple[TestSpec, ...] = setting(check=Items(Part(TestSpec), non_empty=True))


@dataclass(frozen=True)
class PlanFile:
    study: str = setting(check=Name())
    registered_at: str = setting(check=Timestamp())
    alpha: float = setting(check=Number())
    bootstrap: BootstrapSpec = setting(check=Part(BootstrapSpec))
    permutation: PermutationSpec = setting(check=Part(PermutationSpec))
    datasets: dict[str, PlanDatasetSpec] = setting(check=NameMap(Part(PlanDatasetSpec), NAME))
    arms: tuple[str, ...] = setting(check=Names(NAME))
    retrievers: tuple[str, ...] = setting(check=Names(NAME))
    families: tuple[FamilySpec, ...] = setting(check=Items(Part(FamilySpec), non_empty=True))
    exploratory: tuple[EntrySpec, ...] = setting((), Entries())


@dataclass(frozen=True)
class AddedTest(ValueCheck):
    """A test an amendment adds to a family: it names the family first."""

    def __call__(self, value: Any, where: Where) -> Any:
        if not isinstance(value, Mapping) or "family" not in value:
            raise where.child("family").fail("required: the family the test joins")
        return Part(TestSpec)(value, where)


@dataclass(frozen=True)
class AddsSpec:
    arms: tuple[str, ...] = setting((), Names(NAME))
    retrievers: tuple[str, ...] = setting((), Names(NAME))
    families: tuple[FamilySpec, ...] = setting((), Items(Part(FamilySpec)))
    tests: tuple[TestSpec, ...] = setting((), Items(AddedTest()))
    exploratory: tuple[EntrySpec, ...] = setting((), Entries())


@dataclass(frozen=True)
class AmendmentFile:
    id: Any = setting()  # compared, as text, with the file name's number
    created_at: str = setting(check=Timestamp())
    reason: str = setting(check=Name())
    before_outcomes: bool = setting(check=Flag())
    adds: AddsSpec = setting(check=Part(AddsSpec))
