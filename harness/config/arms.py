"""`arms:` one entry per arm, its schema chosen by `kind:` (docs/design.md, Arms).

Kind names live in one place, the declared arm kinds (harness.config.arm_kinds); this schema asks them which
kinds exist, whether a kind needs a model, is built from another arm, or is only planned (declared for the
plan, not built).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from harness.config.arm_kinds import ARM_KINDS
from harness.config.arm_settings import DATASETS, contextual_headers_setting
from harness.config.fields import (
    Anything, ValueCheck, Either, Flag, Int, MapOf, OneOf, Optional, Text, Variants, Where, setting,
)

ALL_DOCUMENTS = "all"


def documents_of(arm_cfg: Any) -> int | str:
    """How many documents an arm is built on: a seeded sample size, or ALL_DOCUMENTS (every arm that
    cannot be sampled)."""
    return getattr(arm_cfg, "documents", ALL_DOCUMENTS)


@dataclass(frozen=True)
class LlmFreeArm:
    kind: str = setting(check=Text(non_empty=True))
    datasets: tuple[str, ...] | None = setting(None, DATASETS)
    contextual_headers: bool | None = contextual_headers_setting()
    # derived kinds whose `of:` has a default (field ablations): the arm they start from, needed when several
    # arms of the kind they declare apply
    of: str | None = setting(None, Optional(Text(non_empty=True)))

    def completed(self, where: Where) -> "LlmFreeArm":
        if self.of is not None and not ARM_KINDS[self.kind].derived:
            raise where.child("of").fail(f"does not apply to an arm of kind {self.kind}")
        return self


@dataclass(frozen=True)
class ModelOption(ValueCheck):
    """One model option for every dataset, or a mapping dataset -> value (harness.arms.model_limits)."""

    expected = "a scalar, or a mapping of dataset names to scalars"

    def __call__(self, value: Any, where: Where) -> Any:
        if isinstance(value, Mapping):
            return MapOf(Anything())(value, where)
        if isinstance(value, (list, tuple)):
            raise where.expected(self.expected, value)
        return value


UNSET = object()  # a model option an arm does not set (for this dataset)


def option_on(value: Any, dataset: str | None) -> Any:
    """An arm's model option as it applies on `dataset`: a scalar applies everywhere, a mapping names
    datasets (UNSET for a dataset it does not name, or when no dataset is given)."""
    if isinstance(value, Mapping):
        return value.get(dataset, UNSET) if dataset is not None else UNSET
    return value


@dataclass(frozen=True)
class LlmArm:
    kind: str = setting(check=Text(non_empty=True))
    model: str = setting(check=Text(non_empty=True))  # a `models:` entry
    datasets: tuple[str, ...] | None = setting(None, DATASETS)
    documents: int | str = setting(
        ALL_DOCUMENTS, Either((OneOf((ALL_DOCUMENTS,)), Int(1)))
    )  # a seeded subset
    seed: int | None = setting(None, Optional(Int()))  # draws the subset when `documents` is a number
    # per-arm (and per-dataset) model limits on top of the model's own options
    model_options: dict[str, Any] = setting(check=MapOf(ModelOption()), factory=dict)
    # a seeded-subset arm may stop short at the spend cap; its contrasts then use the completed clusters
    allow_shortfall: bool = setting(False, Flag())
    contextual_headers: bool | None = contextual_headers_setting()
    # robustness (docs/analyses.md): another frozen template for one of the kind's prompt roles, e.g.
    # `prompts: {enrich: enrich_paraphrase.txt}` (a file under the study's prompts/, hashed by the freeze)
    prompts: dict[str, str] | None = setting(None, Optional(MapOf(Text(non_empty=True), non_empty=True)))
    # robustness: N >= 2 generation runs of the arm (harness.arms.repeats). Repeat 0 is the arm exactly as
    # configured (its cache keys are those of the arm without `repeats`); repeat r > 0 shifts every seed by
    # r * REPEAT_SEED_STRIDE and carries r in its cache keys. Scores are averaged per question over the
    # repeats (as RM's seeds) and kept per repeat for the between-run spread. The arm must sample
    # (temperature > 0, e.g. `model_options: {temperature: 0.7}`): greedy decoding repeats itself exactly.
    repeats: int | None = setting(None, Optional(Int(2)))

    def completed(self, where: Where) -> "LlmArm":
        if self.documents != ALL_DOCUMENTS and self.seed is None:
            raise where.child("seed").fail(
                f"is required with `documents: {self.documents}` (an integer seed)"
            )
        roles = ARM_KINDS[self.kind].prompts
        for role in self.prompts or {}:
            if role not in roles:
                raise where.child("prompts").child(role).fail(
                    f"is not a prompt role of kind {self.kind} (its roles: {', '.join(roles) or 'none'})")
        if self.repeats is not None and self.allow_shortfall:
            raise where.child("repeats").fail(
                "cannot be combined with `allow_shortfall` (every repeat must cover the same documents)")
        for option in self.model_options:
            if option in ("backend", "name", "package", "path"):
                raise where.child("model_options").child(option).fail(
                    "would change the model itself; define another entry under `models:` instead")
        return self


def check_repeats_sample(
    arm: str, cfg: "LlmArm", model_cfg: Any, datasets: Mapping[str, Any], where: Where
) -> None:
    """An arm with `repeats` must sample (temperature > 0) on every dataset it covers: at temperature 0
    greedy decoding ignores the seed, so every repeat would be the same run (harness.arms.repeats)."""
    for dataset in cfg.datasets or list(datasets):
        temperature = option_on((cfg.model_options or {}).get("temperature", UNSET), dataset)
        if temperature is UNSET:
            temperature = getattr(model_cfg, "temperature", None)
        if temperature is None or float(temperature) <= 0:
            raise where.child("repeats").fail(
                f"needs sampling, but the arm decodes at temperature {temperature} on dataset {dataset} "
                "(greedy "
                "decoding makes every repeat identical); set `model_options: {temperature: ...}` above 0"
            )


@dataclass(frozen=True)
class DerivedArm:
    """An add-on arm of the amendments: it starts from the chunks of the arm named by `of:`."""

    kind: str = setting(check=Text(non_empty=True))
    of: str = setting(check=Text(non_empty=True))  # the arm whose chunks it starts from (E or E-K)
    model: str | None = setting(None, Optional(Text(non_empty=True)))  # M-TP: a `models:` entry
    datasets: tuple[str, ...] | None = setting(None, DATASETS)
    seeds: int | None = setting(None, Optional(Int(1)))  # RM: count of random seeds (0, 1, ..., seeds - 1)
    embedder: str | None = setting(
        None, Optional(Text(non_empty=True))
    )  # SM: a dense retriever (or its model)
    contextual_headers: bool | None = contextual_headers_setting()

    def completed(self, where: Where) -> "DerivedArm":
        if self.contextual_headers and ARM_KINDS[self.kind].retrieval_time:
            raise where.child("contextual_headers").fail(
                f"does not apply to an arm of kind {self.kind}: it is expanded at retrieval time and indexes "
                f"the chunk set of its `of:` arm ({self.of}); set the option on that arm instead")
        required = ARM_KINDS[self.kind].requires
        for name in required:
            if getattr(self, name) is None:
                raise where.child(name).fail(f"is required for an arm of kind {self.kind}")
        for name in ("seeds", "embedder", "model"):
            if name not in required and getattr(self, name) is not None:
                raise where.child(name).fail(f"does not apply to an arm of kind {self.kind}")
        return self


def _arm_schema(raw: Mapping[str, Any]) -> type | None:
    spec = ARM_KINDS.get(raw.get("kind"))
    if spec is None:
        return None
    if spec.settings is not None:
        return spec.settings
    if spec.of_required or not spec.implemented:  # planned kinds are declared with `of:` as add-on arms are
        return DerivedArm
    return LlmArm if spec.needs_model else LlmFreeArm


ARM = Variants("kind", _arm_schema, tuple(ARM_KINDS))
ArmConfig = LlmFreeArm | LlmArm | DerivedArm
