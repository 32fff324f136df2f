"""The human spot check of the nugget judge: a seeded sample of its verdicts on the arms' answers, as CSV
for labelling, and the agreement (Cohen's kappa) of a labelled file recorded for the stats stage."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np

from harness.errors import HarnessError
from harness.files import atomic_write_json, atomic_write_text, read_json
from harness.metrics.judge_agreement import HUMAN_COLUMN, JUDGE_COLUMN, KappaResult, read_spot_check
from harness.pipeline.answer import SPOT_CHECK_FILE
from harness.study import Study
from harness.grid.paths import judge_acceptance_path, judges_dir

SAMPLE_COLUMNS = (
    "dataset",
    "arm",
    "retriever",
    "qid",
    "nugget",
    "nugget_text",
    "answer",
    JUDGE_COLUMN,
    HUMAN_COLUMN,
)


def verdict_rows(study: Study) -> list[dict]:
    """Every arm verdict the answer stage wrote, in file order (dataset, then arm__retriever files)."""
    rows = []
    for path in sorted(judges_dir(study).glob("*/*.jsonl")):
        arm, _, retriever = path.stem.partition("__")
        for line in path.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            rows.append({"dataset": path.parent.name, "arm": arm, "retriever": retriever, "qid": r["qid"],
                         "nugget": r["nugget"], "nugget_text": r["text"], "answer": r["answer"],
                         JUDGE_COLUMN: r["verdict"], HUMAN_COLUMN: ""})
    return rows


def sample_csv(rows: list[dict], *, n: int, seed: int) -> str:
    """A seeded sample (without replacement, min(n, rows)) in the rows' own order, as CSV."""
    if not rows:
        raise HarnessError("no judge verdicts to sample; run `harness answer` first")
    picked = sorted(
        np.random.default_rng(seed).choice(len(rows), size=min(n, len(rows)), replace=False).tolist()
    )
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=SAMPLE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows[i] for i in picked)
    return out.getvalue()


def write_sample(study: Study, out: Path, *, n: int | None = None, seed: int | None = None) -> int:
    cfg = study.config.judge
    text = sample_csv(verdict_rows(study), n=cfg.sample_size if n is None else n,
                      seed=cfg.sample_seed if seed is None else seed)
    atomic_write_text(out, text)
    return text.count("\n") - 1


def record_agreement(study: Study, result: KappaResult, source: Path) -> Path:
    """results/judges/spot_check.json, and the judge's entry of acceptance.json, which stats reads."""
    record = {"file": str(source), "rows": result.rows, "kappa": result.kappa, "threshold": result.threshold,
              "passed": result.passed, "reason": result.reason}
    atomic_write_json(judges_dir(study) / SPOT_CHECK_FILE, record)
    path = judge_acceptance_path(study)
    if path.is_file():
        acceptance = read_json(path)
        name = study.config.judge.name
        if name in acceptance:
            acceptance[name]["spot_check"] = record
            atomic_write_json(path, acceptance)
    return judges_dir(study) / SPOT_CHECK_FILE


__all__ = ["read_spot_check", "record_agreement", "sample_csv", "verdict_rows", "write_sample"]
