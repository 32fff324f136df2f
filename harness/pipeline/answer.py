"""`answer`: the reader and the nugget judge over the configured answer cells (docs/answers.md); runs after
score.

For each `reader.cells` entry (dataset, retriever, arms) whose cells are scored, the reader answers every
question from exactly B source tokens of the cell's run file (harness.pipeline.reading). Outputs:

- results/answers/<dataset>/<arm>__<retriever>.jsonl: per question the answer, what the reader saw
  (context hash, chunk ids, cut) and flags (failed, truncated);
- results/answers/<dataset>/<arm>__<retriever>.parquet: the cell's answer_f1@<B>t rows (metric set qasper)
  or nugget_recall@<B>t rows (metric set freshstack), this stage's part of the per-question table;
  harness.pipeline.table assembles it with score's parts into results/per_question/<dataset>.parquet/.csv,
  so stats, audit and report read them like any metric, and a rerun of `score` keeps them;
- results/judges/<dataset>/<arm>__<retriever>.jsonl: every nugget verdict; results/judges/controls.jsonl
  and results/judges/acceptance.json (the controls, judged before any arm; stats reads the rates);
- results/answers/reader_acceptance.json: the reader's controls per dataset
(harness.pipeline.reader_controls),
  answered after the judge's controls and, like them, before any arm of any dataset; stats reads the rates;
- results/answers/summary.json: counts per cell (questions, dropped, failed, truncated contexts).

Every call goes through the generation cache of its model (resumable, replayable, ledgered against the
study-wide cap). `fresh` and `replay` come from the CLI, never from the environment.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from harness.arms.build import read_chunk_set
from harness.config.fields import replace
from harness.data.load import LoadedDataset, load_dataset, read_selection
from harness.errors import HarnessError
from harness.files import atomic_write_json, atomic_write_text, read_json
from harness.llm.cache import GenerationCache
from harness.llm.ledger import SpendLedger, study_spend_usd
from harness.llm.prompts import PromptTemplate
from harness.llm.registry import make_backend
from harness.llm.session import LlmSession
from harness.metrics.budget import TokenCache
from harness.metrics.nuggets import (
    NEGATIVE_CONTROL_MAX, POSITIVE_CONTROL_MIN, negative_control, positive_control, score_verdicts,
    seeded_derangement,
)
from harness.metrics.registry import get_metric_set
from harness.grid.cells import Cell, answer_cells
from harness.grid.paths import (
    answers_dir, answers_path, generations_path, judge_acceptance_path, judges_dir, run_path,
)
from harness.grid.states import SCORED, cell_state, mark_answer_done
from harness.pipeline.reader_controls import reader_controls, write_reader_acceptance
from harness.pipeline.reading import (
    ANSWER_F1,
    NUGGET_RECALL,
    ReaderContext,
    answer_metric,
    ask_reader,
    judge_nuggets,
    reader_context,
    score_answer,
)
from harness.pipeline.parts import write_part
from harness.grid.results import ResultRow
from harness.pipeline.table import assemble_per_question
from harness.provenance.plan_check import answer_test_gaps
from harness.retrieval.runfile import read_run
from harness.seeded_draw import seeded_sample
from harness.study import Study

SPOT_CHECK_FILE = "spot_check.json"  # written by `harness judge-agreement --study`
JUDGE_CONTROLS_FILE = "controls.jsonl"  # under results/judges/



def model_family(model_cfg: Any) -> str:
    """The family a model belongs to: the letters that open its model name (qwen2.5:7b -> qwen,
    openai/gpt-oss-120b -> gpt, gemma3-270m-... -> gemma)."""
    name = (
        getattr(model_cfg, "name", None)
        or getattr(model_cfg, "package", None)
        or getattr(model_cfg, "model_path", "")
    )
    base = str(name).rstrip("/").split("/")[-1].lower()
    match = re.match(r"[a-z]+", base)
    return match.group(0) if match else base


def check_judge_family(study: Study) -> None:
    """With `judge.require_distinct_family`, the judge's family must differ from the reader's and from
    every indexing model's (the arms' models)."""
    judge = study.config.judge
    if judge.model is None or not judge.require_distinct_family:
        return
    family = model_family(study.models[judge.model])
    others = (
        {f"reader model {study.config.reader.model!r}": study.config.reader.model}
        if study.config.reader.model
        else {}
    )
    others |= {f"arm {arm!r} (indexing model {cfg.model!r})": cfg.model
               for arm, cfg in study.arms.items() if getattr(cfg, "model", None)}
    clash = [what for what, model in others.items() if model_family(study.models[model]) == family]
    if clash:
        raise HarnessError(
            f"{study.config_path}: `judge.require_distinct_family` is true, but the judge model "
            f"{judge.model!r} "
            f"is of family {family!r} like the {', '.join(clash)}; choose a judge from another family"
        )


def _model_config(study: Study, name: str, overrides: Mapping[str, Any], key: str) -> Any:
    cfg = study.models[name]
    known = {f for f in cfg.__dataclass_fields__}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise HarnessError(f"{study.config_path}: `{key}.model_options.{unknown[0]}` is not an option of "
                           f"{cfg.backend} models ({', '.join(sorted(known))})")
    return replace(cfg, **dict(overrides)) if overrides else cfg


def sample_questions(dataset: LoadedDataset, n: int | str, seed: int) -> LoadedDataset:
    """The dataset with `random.Random(seed).sample(sorted(qids), n)` of its questions (all when n is "all"
    or covers them); the stats pair arms on the answered qids."""
    if n == "all" or n >= len(dataset.questions):
        return dataset
    keep = set(seeded_sample((q.qid for q in dataset.questions), n, seed))
    return dataclasses.replace(dataset, questions=tuple(q for q in dataset.questions if q.qid in keep))


def ranked_ids(study: Study, cell: Cell) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for row in sorted(read_run(run_path(study, *cell.names)), key=lambda r: (r.qid, r.rank)):
        out.setdefault(row.qid, []).append(row.chunk_id)
    return out


class _Sessions:
    """One session per model name, sharing one cache per model file (the reader and judge may be one
    model)."""

    def __init__(self, study: Study, stack: ExitStack, *, fresh: bool, replay: bool):
        self.study, self.stack, self.fresh, self.replay = study, stack, fresh, replay
        self._caches: dict[str, GenerationCache] = {}
        self.ledgers: dict[str, SpendLedger] = {}

    def session(self, role: str, model_name: str, model_cfg: Any) -> LlmSession:
        path = generations_path(self.study, model_name)
        if model_name not in self._caches:
            self._caches[model_name] = self.stack.enter_context(
                GenerationCache(path, fresh=self.fresh, read_only=self.replay))
        cache = self._caches[model_name]
        cap = self.study.config.llm.spend_cap_usd
        ledger = self.ledgers[role] = SpendLedger(role, None if cap is None else float(cap),
                                                 spent_before_usd=study_spend_usd(path.parent))
        backend = make_backend(model_cfg, replay_from=cache if self.replay else None)
        retry = (
            None
            if model_cfg.retry_temperature is None
            else {"temperature": float(model_cfg.retry_temperature)}
        )
        return LlmSession(backend, cache, ledger, retry_options=retry)


def _jsonl(path: Path, records: Sequence[Mapping[str, Any]]) -> None:
    atomic_write_text(
        path, "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in records)
    )


@dataclass
class Instruments:
    """The reader and the judge of one answer run (sessions on their generation caches) and what every call
    needs; opened by open_instruments, shared by `answer` and the audit's replays."""

    reader: LlmSession
    reader_template: PromptTemplate
    seeds: list[int]  # the reader's seed, then the retry seeds
    judge: LlmSession | None
    judge_template: PromptTemplate | None
    judge_seed: int | None
    sessions: "_Sessions"
    tokens: TokenCache
    reader_summary: dict[str, Any]
    judge_summary: dict[str, Any] | None


@dataclass
class Controls:
    """What the instrument checks produced, before any arm: the datasets to answer as
    (name, dataset, budget, metrics, judged), the judge's control verdicts and scores, the reader's rates."""

    prepared: list[tuple[str, LoadedDataset, int, tuple[str, ...], bool]]
    judge_rows: list[dict]
    judge_scores: dict[str, dict]
    reader_rates: dict[str, dict]
    judged_any: bool


def open_instruments(
    study: Study, stack: ExitStack, *, fresh: bool = False, replay: bool = False
) -> Instruments:
    """The reader's and the judge's sessions, closed with `stack`; `replay` answers only from the cache."""
    reader_cfg, judge_cfg = study.config.reader, study.config.judge
    if fresh and replay:
        raise HarnessError("answer: fresh (regenerate) and replay (cache only) contradict each other")
    check_judge_family(study)
    reader_template = PromptTemplate.load(study.prompts_dir, reader_cfg.prompt)
    judge_template = PromptTemplate.load(study.prompts_dir, judge_cfg.prompt) if judge_cfg.model else None
    reader_model = _model_config(study, reader_cfg.model, reader_cfg.model_options, "reader")
    sessions = _Sessions(study, stack, fresh=fresh, replay=replay)
    reader = sessions.session("reader", reader_cfg.model, reader_model)
    judge = judge_seed = judge_summary = None
    if judge_template is not None:
        judge_model = _model_config(study, judge_cfg.model, judge_cfg.model_options, "judge")
        judge, judge_seed = sessions.session("judge", judge_cfg.model, judge_model), judge_model.seed
        judge_summary = {
            "name": judge_cfg.name,
            "model": judge_cfg.model,
            "prompt_sha256": judge_template.sha256,
        }
    return Instruments(reader, reader_template, [reader_model.seed, *study.config.llm.retry_seeds], judge,
                       judge_template, judge_seed, sessions, TokenCache(),
                       {"model": reader_cfg.model, "prompt_sha256": reader_template.sha256}, judge_summary)


def answered_dataset(study: Study, name: str, selection: Any) -> LoadedDataset:
    """The dataset as `answer` reads it: its seeded sample of `reader.questions`."""
    reader_cfg = study.config.reader
    return sample_questions(
        load_dataset(study, name, selection=selection), reader_cfg.questions, reader_cfg.seed
    )


def answer_settings(study: Study, dataset: LoadedDataset,
                    instruments: Instruments) -> tuple[int, tuple[str, ...], bool]:
    """The dataset's reader budget, its answer metrics, and whether the judge scores its answers."""
    budget = study.config.reader.budgets.get(dataset.metric_set)
    if budget is None:
        raise HarnessError(f"{study.config_path}: `reader.budgets.{dataset.metric_set}` is missing "
                           f"(dataset {dataset.name!r})")
    metrics = get_metric_set(dataset.metric_set).answer_metrics
    judged = NUGGET_RECALL in metrics and any(q.nuggets for q in dataset.questions)
    if judged and instruments.judge is None:
        raise HarnessError(
            f"{study.config_path}: dataset {dataset.name!r} has nuggets to judge but `judge.model` is not set"
        )
    return budget, metrics, judged


def run_controls(study: Study, instruments: Instruments, selection: Any) -> Controls:
    """Every dataset's judge controls, then its reader controls, before any arm is answered."""
    reader_cfg, judge_cfg = study.config.reader, study.config.judge
    judge, judge_template = instruments.judge, instruments.judge_template
    out = Controls([], [], {"positive": {}, "negative": {}}, {}, False)
    for name in dict.fromkeys(c.dataset for c in reader_cfg.cells):
        dataset = answered_dataset(study, name, selection)
        budget, metrics, judged = answer_settings(study, dataset, instruments)
        if judged:  # the controls come first: no arm is judged before the judge itself was checked
            out.judged_any = True
            out.judge_rows += _controls(
                dataset,
                judge,
                judge_template,
                judge_cfg.control_seed,
                out.judge_scores,
                judge_seed=instruments.judge_seed,
            )
        # then the reader's (scored by the judge on nugget datasets)
        out.reader_rates[name] = reader_controls(
            dataset,
            instruments.reader,
            instruments.reader_template,
            budget=budget,
            tokens=instruments.tokens,
            seeds=instruments.seeds,
            seed=judge_cfg.control_seed,
            f1=ANSWER_F1 in metrics,
            judge=judge if judged else None,
            judge_template=judge_template,
            judge_seed=instruments.judge_seed,
        )
        out.prepared.append((name, dataset, budget, metrics, judged))
    return out


def answer_one_cell(
    study: Study,
    instruments: Instruments,
    dataset: LoadedDataset,
    cell: Cell,
    budget: int,
    metrics: Sequence[str],
    judged: bool,
    frozen_hash: str | None,
) -> tuple[list[ResultRow], dict]:
    """One cell answered (and judged): writes its answers and verdicts, returns its rows and counts."""
    return _answer_cell(study, dataset, cell, budget, instruments.tokens, instruments.reader,
                        instruments.reader_template, instruments.seeds, instruments.judge if judged else None,
                        instruments.judge_template, frozen_hash, judge_seed=instruments.judge_seed,
                        f1=ANSWER_F1 in metrics)


def answer_study(study: Study, *, frozen_hash: str | None, fresh: bool = False, replay: bool = False,
                 progress: bool = True, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Answer (and judge) every configured answer cell; returns the summary written to summary.json."""
    from tqdm import tqdm

    if fresh and replay:
        raise HarnessError("answer: fresh (regenerate) and replay (cache only) contradict each other")
    if not study.config.reader.cells:
        log(f"answer: no `reader.cells` in {study.config_path}; nothing to answer")
        return {}
    selection = read_selection(study)
    with ExitStack() as stack:
        instruments = open_instruments(study, stack, fresh=fresh, replay=replay)
        summary: dict[str, Any] = {"reader": instruments.reader_summary, "judge": instruments.judge_summary,
                                   "cells": {}, "controls": None}
        controls = run_controls(study, instruments, selection)
        write_reader_acceptance(study, summary["reader"], controls.reader_rates, frozen_hash=frozen_hash)
        summary["reader_controls"] = {name: {k: entry[k] for k in ("positive", "negative")}
                                      for name, entry in controls.reader_rates.items()}
        for name, dataset, budget, metrics, judged in controls.prepared:
            cells = [cell for cell in answer_cells(study) if cell.dataset.name == name]
            for cell in tqdm(cells, desc=f"answer {name}", unit="cell", disable=not progress):
                cell_rows, counts = answer_one_cell(
                    study, instruments, dataset, cell, budget, metrics, judged, frozen_hash
                )
                write_part(
                    answers_dir(study), *cell.names, cell_rows
                )  # this stage's rows: only it writes them
                mark_answer_done(study, cell, frozen_hash=frozen_hash, counts=counts)
                summary["cells"][str(cell)] = counts
                log(f"answer {cell}: {counts}")
            assemble_per_question(study, name, frozen_hash, log=log)
        if controls.judged_any:  # written even when no reference answer made the controls computable
            _jsonl(judges_dir(study) / JUDGE_CONTROLS_FILE, controls.judge_rows)
            summary["controls"] = _write_acceptance(study, study.config.judge.name, controls.judge_scores)
        summary["ledger"] = {
            role: ledger.totals().as_dict() for role, ledger in instruments.sessions.ledgers.items()
        }
    _write_summary(answers_dir(study) / "summary.json", summary | {"frozen_config_hash": frozen_hash})
    return summary


RUN_COUNTS = ("fresh_calls", "cache_hits")  # how the calls were answered this time, not what they produced


def _write_summary(path: Path, summary: dict[str, Any]) -> None:
    """summary.json; a rerun that differs only in how many calls the cache answered keeps the file, whose
    counts then say how the answers were first produced (a rerun that changes nothing writes nothing)."""
    def produced(record: Any) -> Any:
        ledger = {role: {k: v for k, v in counts.items() if k not in RUN_COUNTS}
                  for role, counts in (record.get("ledger") or {}).items()}
        return {**record, "ledger": ledger}

    try:
        old = read_json(path) if path.is_file() else None
    except HarnessError:  # unreadable: written afresh
        old = None
    if isinstance(old, dict) and produced(old) == produced(json.loads(json.dumps(summary))):
        return
    atomic_write_json(path, summary)


def _controls(dataset: LoadedDataset, judge: LlmSession, template: PromptTemplate, seed: int,
              controls: dict, *, judge_seed: int) -> list[dict]:
    """Judge each question's own reference answer (positive) and a deranged one (negative)."""
    with_reference = sorted((q for q in dataset.questions if q.nuggets and q.reference_answer.strip()),
                            key=lambda q: q.qid)
    by_qid = {q.qid: q for q in with_reference}
    rows: list[dict] = []
    if not with_reference:
        return rows
    other = seeded_derangement(by_qid, seed=seed) if len(by_qid) >= 2 else {}
    for q in with_reference:
        pairs = [("positive", q.reference_answer, q.qid)]
        if other:
            pairs.append(("negative", by_qid[other[q.qid]].reference_answer, other[q.qid]))
        for control, answer, source in pairs:
            verdicts = judge_nuggets(judge, template, q.query, q.nuggets, answer, seed=judge_seed)
            controls[control][f"{dataset.name}/{q.qid}"] = score_verdicts([v.verdict for v in verdicts])
            rows += [
                {
                    "dataset": dataset.name,
                    "control": control,
                    "qid": q.qid,
                    "answer_of": source,
                    "nugget": i,
                    "text": v.nugget,
                    "verdict": v.verdict,
                    "raw": v.raw,
                    "truncated": v.truncated,
                }
                for i, v in enumerate(verdicts)
            ]
    return rows


def judge_acceptance_entry(study: Study, controls: dict) -> dict:
    """The judge's entry of results/judges/acceptance.json from its control scores (and the spot check)."""
    positive = positive_control(controls["positive"], threshold=POSITIVE_CONTROL_MIN)
    negative = negative_control(controls["negative"], threshold=NEGATIVE_CONTROL_MAX)
    entry = {"positive": positive.mean_recall, "negative": negative.mean_recall,
             "positive_questions": positive.questions, "negative_questions": negative.questions,
             "unparseable": positive.unparseable + negative.unparseable,
             "reasons": [c.reason for c in (positive, negative) if not c.passed]}
    spot = judges_dir(study) / SPOT_CHECK_FILE
    if spot.is_file():
        entry["spot_check"] = read_json(spot)
    return entry


def _write_acceptance(study: Study, judge_name: str, controls: dict) -> dict:
    entry = judge_acceptance_entry(study, controls)
    path = judge_acceptance_path(study)
    record = read_json(path) if path.is_file() else {}
    record[judge_name] = entry
    atomic_write_json(path, record)
    return entry


def _answer_cell(study, dataset, cell, budget, tokens, reader, template, seeds, judge, judge_template,
                 frozen_hash, *, judge_seed, f1: bool) -> tuple[list[ResultRow], dict[str, int]]:
    """Answer every question of one cell; score answer F1 (`f1`) or nugget recall (a `judge`), or neither
    (a metric set with nuggets but none given: the answers are still written)."""
    if cell_state(study, cell, frozen_hash) != SCORED:
        raise HarnessError(
            f"answer: cell {cell} is not scored under the current freeze; run `harness score` first"
        )
    chunks = {c.chunk_id: c for c in read_chunk_set(study, dataset, cell.arm, frozen_hash=frozen_hash)}
    ranked = ranked_ids(study, cell)
    counts = Counter(questions=0, answered=0, reader_failed=0, reader_truncated=0, judge_truncated=0,
                     dropped_no_gold=0, dropped_no_nuggets=0, verdicts_unparseable=0, verdicts_partial=0)
    records, verdict_rows, rows = [], [], []
    arm_docs = {c.doc_id for c in chunks.values()}
    for q in sorted(dataset.questions, key=lambda q: q.qid):
        if q.qid not in ranked and not arm_docs.intersection(q.scope):
            counts["outside_arm"] += 1  # an arm built on a sample of documents: no result, as in score
            continue
        counts["questions"] += 1
        missing = [cid for cid in ranked.get(q.qid, []) if cid not in chunks]
        if missing:
            raise HarnessError(
                f"{run_path(study, *cell.names)}: chunk {missing[0]} is not in the {cell.arm} chunk set"
            )
        context: ReaderContext = reader_context([chunks[c] for c in ranked.get(q.qid, [])], budget, tokens)
        reply = ask_reader(reader, template, q.query, context, seeds=seeds)
        counts["answered"] += 1
        counts["reader_failed"] += reply.failed
        counts["reader_truncated"] += reply.truncated
        records.append(
            {
                "qid": q.qid,
                "answer": reply.answer,
                "failed": reply.failed,
                "attempts": reply.attempts,
                "truncated": reply.truncated,
                **context.to_json(),
            }
        )
        scored = score_answer(q, reply.answer, f1=f1, judge=judge, judge_template=judge_template,
                              judge_seed=judge_seed)
        if scored.dropped:
            counts[scored.dropped] += 1
            continue
        if scored.nuggets is not None:
            counts["verdicts_unparseable"] += scored.nuggets.unparseable
            counts["verdicts_partial"] += scored.nuggets.partial
            counts["judge_truncated"] += sum(v.truncated for v in scored.verdicts)
            verdict_rows += [{"qid": q.qid, "nugget": i, "text": v.nugget, "answer": reply.answer,
                              "verdict": v.verdict, "raw": v.raw} for i, v in enumerate(scored.verdicts)]
        rows.append(
            ResultRow(*cell.names, q.qid, q.cluster, q.stratum, answer_metric(f1, budget), scored.value)
        )
    _jsonl(answers_path(study, cell), records)
    if judge is not None:
        _jsonl(judges_dir(study) / dataset.name / f"{cell.arm}__{cell.retriever}.jsonl", verdict_rows)
    return rows, dict(counts)


def uncovered_answer_tests(study: Study, plan: Any) -> list[str]:
    """The plan's answer-level tests (plan and amendments) that the config cannot run, as
    "<family>/<test>: <why>" (answer_test_gaps). Empty when every such test is runnable once `answer` has
    run."""
    problems = []
    for family in plan.families:
        for test in family.tests:
            why = answer_test_gaps(study, test)
            if why:
                problems.append(f"{family.id}/{test.id}: " + "; ".join(why))
    return problems
