"""`reader:` and `judge:` the answer-level stage (docs/answers.md): a fixed reader answers each question of
the configured cells from exactly B tokens of retrieved source text, and a judge scores those answers against
the question's nuggets (strict recall), behind acceptance controls.

    reader:
      model: qwen7b                       # a `models:` entry; null: no answer stage
      model_options: {num_predict: 200}   # overrides of the model's options for reader calls only
      cells:                              # (dataset, retriever, arms) to answer; default: none
        - {dataset: qasper, retriever: hybrid, arms: [E, S+T, CR]}
    judge:
      model: judge-model
      require_distinct_family: true       # the judge's family must differ from the reader's and indexers'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.config.fields import (
    Anything, Either, Flag, Int, ListOf, MapOf, OneOf, Optional, Nested, Text, Where, setting,
)
from harness.config.metric_sets import ByMetricSet, reader_budgets
from harness.config.names import not_a_name

READER_PROMPT = "reader.txt"
JUDGE_PROMPT = "judge_nugget.txt"
JUDGE_NAME = "nugget-judge"  # the name plans give in a test's `acceptance.judge`
CONTROL_SEED = 0  # seeds the negative control's derangement
SAMPLE_SIZE = 100  # rows `harness judge-sample` exports


@dataclass(frozen=True)
class AnswerCell:
    dataset: str = setting(check=Text(non_empty=True))
    retriever: str = setting(check=Text(non_empty=True))
    arms: tuple[str, ...] = setting(check=ListOf(Text(non_empty=True), min_len=1, unique=True))


@dataclass(frozen=True)
class Reader:
    model: str | None = setting(None, Optional(Text(non_empty=True)))
    prompt: str = setting(READER_PROMPT, Text(non_empty=True))
    model_options: dict[str, Any] = setting(check=MapOf(Anything()), factory=dict)
    # metric set -> tokens of context
    budgets: dict[str, int] = setting(check=ByMetricSet(Int(1)), factory=reader_budgets)
    cells: tuple[AnswerCell, ...] = setting((), ListOf(Nested(AnswerCell)))
    # a seeded sample of each dataset's questions (the same in every cell), for compute-bound studies
    questions: int | str = setting("all", Either((OneOf(("all",)), Int(1))))
    seed: int = setting(0, Int())

    def completed(self, where: Where) -> "Reader":
        if self.cells and self.model is None:
            raise where.child("model").fail("is required when `reader.cells` names cells to answer")
        return self


@dataclass(frozen=True)
class Judge:
    model: str | None = setting(None, Optional(Text(non_empty=True)))
    name: str = setting(JUDGE_NAME, Text(non_empty=True))
    prompt: str = setting(JUDGE_PROMPT, Text(non_empty=True))
    model_options: dict[str, Any] = setting(check=MapOf(Anything()), factory=dict)
    require_distinct_family: bool = setting(False, Flag())
    control_seed: int = setting(CONTROL_SEED, Int())
    sample_size: int = setting(SAMPLE_SIZE, Int(1))
    sample_seed: int = setting(CONTROL_SEED, Int())


def check_answer_names(reader: Reader, judge: Judge, config: Any, where: Where) -> None:
    """Models, datasets, arms and retrievers the answer sections name must be configured."""
    for key, section in (("reader", reader), ("judge", judge)):
        if section.model is not None and section.model not in config.models:
            raise not_a_name(where.child(key).child("model"), section.model, config.models, "models")
    for i, cell in enumerate(reader.cells):
        at = where.child("reader").child("cells").child(f"[{i}]")
        if cell.dataset not in config.datasets:
            raise not_a_name(at.child("dataset"), cell.dataset, config.datasets, "datasets")
        if cell.retriever not in config.retrievers:
            raise not_a_name(at.child("retriever"), cell.retriever, config.retrievers, "retrievers")
        for j, arm in enumerate(cell.arms):
            if arm not in config.arms:
                raise not_a_name(at.child("arms").child(f"[{j}]"), arm, config.arms, "arms")
