"""The registered analysis as data: what harness.plan.load reads from plan/plan.yaml and amendments."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import InputError
from harness.plan.analyses import AnalysisPlan


@dataclass(frozen=True)
class ReaderAcceptance:
    """The fixed reader's controls on one dataset, in its answer metric (0..1): answering from each question's
    own gold evidence it must reach `positive_min`; from another cluster's evidence it must stay at or below
    `negative_max`. Otherwise the dataset's answer-level rows are reported as exploratory."""

    positive_min: float
    negative_max: float


@dataclass(frozen=True)
class DatasetPlan:
    name: str
    primary_metric: str
    cluster: str
    stratified: bool
    margin: float
    metrics: tuple[str, ...]
    reader_acceptance: ReaderAcceptance | None = None


@dataclass(frozen=True)
class Subset:
    """A registered subset of a test's questions; every part given must hold.

    - `strata`: only questions of these strata (FreshStack domains), e.g. per-domain H1;
    - `n_clusters` + `seed`: random.Random(seed).sample(sorted(clusters), n_clusters), after `strata`;
    - `allow_shortfall`: an arm built on the sample may have completed fewer clusters than planned
      (a quota ran out); the contrast then uses the clusters both arms have and names the dropped ones.
    """

    n_clusters: int | None = None
    seed: int | None = None
    strata: tuple[str, ...] | None = None
    allow_shortfall: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.strata is not None:
            out["strata"] = list(self.strata)
        if self.n_clusters is not None:
            out |= {"n_clusters": self.n_clusters, "seed": self.seed}
        if self.allow_shortfall:
            out["allow_shortfall"] = True
        return out


@dataclass(frozen=True)
class Acceptance:
    """An outcome that counts only when its judge passed its acceptance controls (e.g. nugget recall):
    the judge must reach `positive_min` on the accepted answer and stay at or below `negative_max` on
    another question's answer; otherwise the test's rows are reported as exploratory."""

    judge: str
    positive_min: float
    negative_max: float


@dataclass(frozen=True)
class TestPlan:
    id: str
    family: str
    a: str
    b: str
    retriever: str
    dataset: str
    metric: str
    rule: str  # a key of harness.plan.rules.RULE_TERMS; defaults to the family's rule
    margin: float | None
    subset: Subset | None
    source: str  # "plan" or "amendment NNNN"
    acceptance: Acceptance | None = None
    retriever_b: str | None = None  # cross-retriever test: B under this retriever, A under `retriever`
    demoted: str | None = None  # why its rows are exploratory whatever the family's tier (stats.demotion)


@dataclass(frozen=True)
class FamilyPlan:
    id: str
    tier: str
    multiplicity: str
    rule: str  # default rule of the family's tests
    signflip_required: bool  # two-sided tests: diff. also needs the (Holm-adjusted) sign-flip p
    seed: int
    description: str
    source: str
    tests: tuple[TestPlan, ...]
    demoted: str | None = None  # why its registered tier was lowered to exploratory (harness.stats.demotion)


@dataclass(frozen=True)
class Amendment:
    id: str
    path: Path
    created_at: str
    reason: str
    before_outcomes: bool
    arms: tuple[str, ...]
    retrievers: tuple[str, ...]
    families: tuple[str, ...]
    tests: tuple[str, ...]


@dataclass(frozen=True)
class Plan:
    path: Path
    study: str
    registered_at: str
    alpha: float
    resamples: int
    max_flips: int
    datasets: dict[str, DatasetPlan]
    arms: tuple[str, ...]
    retrievers: tuple[str, ...]
    families: tuple[FamilyPlan, ...]
    amendments: tuple[Amendment, ...]
    analyses: tuple[AnalysisPlan, ...] = ()  # exploratory analyses (harness.plan.analyses)

    def family(self, family_id: str) -> FamilyPlan:
        for fam in self.families:
            if fam.id == family_id:
                return fam
        known = ", ".join(f.id for f in self.families)
        raise InputError(f"no family {family_id!r} in the plan (families: {known})", path=self.path)


def derive_seed(family_seed: int, test_id: str) -> int:
    """Per-test seed from the family seed and the test id (stable across runs and platforms)."""
    digest = int.from_bytes(hashlib.sha256(test_id.encode("utf-8")).digest()[:8], "big")
    return int(np.random.SeedSequence([family_seed, digest]).generate_state(1, dtype=np.uint32)[0])
