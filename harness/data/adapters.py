"""The dataset adapters by the name configs/study.yaml gives in `adapter:`; each module's ADAPTER says how
it loads, draws its selection, which configured paths it reads and which strata it declares. The names and
entry schemas are declared in harness.config.datasets (DATASET_SCHEMAS, the same keys)."""

from __future__ import annotations

from harness.data import freshstack, jsonl_corpus, qasper, question_evidence
from harness.data.common import Adapter

ADAPTERS: dict[str, Adapter] = {
    "qasper": qasper.ADAPTER,
    "freshstack": freshstack.ADAPTER,
    "jsonl": jsonl_corpus.ADAPTER,
    "question_evidence": question_evidence.ADAPTER,
}
