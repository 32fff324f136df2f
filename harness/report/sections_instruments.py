"""The Instruments section (docs/instruments.md), first after Study identity: can the instruments the
outcomes rest on be trusted? One table, read from what the stages wrote:

- the reader's controls per dataset (results/answers/reader_acceptance.json) against the plan's
  `datasets.<name>.reader_acceptance`;
- the judge's controls and human spot check (results/judges/acceptance.json) against its tests' `acceptance`;
- per dense retriever, the texts its embedder cut to the model window (the truncated flags of the study's
  vector cache, results/embeddings/);
- LLM failures and retries per arm: the indexing model's (chunk manifests) and the reader's per answer cell
  (results/answers/<dataset>/<arm>__<retriever>.jsonl).

A check with a registered threshold says pass or FAIL and names the tests a failure reports as exploratory
(harness.stats.families.instrument_checks decides that; this section only shows it).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from harness.config.retrievers import retriever_spec
from harness.files import read_json
from harness.grid.cells import answer_cells
from harness.grid.paths import answers_path, embeddings_dir, judge_acceptance_path, reader_acceptance_path
from harness.metrics.judge_agreement import KAPPA_MIN
from harness.metrics.registry import is_answer_level
from harness.report.context import ReportContext
from harness.report.model import Missing, Section, table
from harness.report.sections_inputs import arms_of, arm_manifest

HEADER = ("instrument", "check", "measured", "threshold", "result", "demotes on failure")
EMBEDDING_KINDS = ("embedding", "late-chunk")  # vector-cache namespaces an embedder writes


def instruments(ctx: ReportContext) -> Section:
    sec = Section("instruments", "Instruments")
    rows = _reader_rows(ctx, sec) + _judge_rows(ctx, sec) + _embedder_rows(ctx) + _llm_rows(ctx)
    if rows:
        sec.tables.append(
            table(
                "instruments",
                "Every instrument the outcomes rest on. Reader and judge: their acceptance controls "
                "against the plan's thresholds (rates in the dataset's answer metric, x100); a FAIL reports "
                "the tests "
                "in the last column as exploratory. Embedders: distinct texts (chunks of every arm, queries) "
                "in the "
                "study's vector cache that were cut to the model window. LLM calls: failed calls (no usable "
                "output "
                "after the retries) and retries per call, per arm; no threshold is registered for these.",
                HEADER,
                rows,
            )
        )
    return sec


def _pct(value) -> str:
    return "not computable" if value is None else f"{100 * value:.1f}%"


def _result(passed: bool) -> str:
    return "pass" if passed else "FAIL"


def _tests(ctx: ReportContext, keep) -> str:
    ids = [t.id for f in ctx.plan.families for t in f.tests if keep(t)] if ctx.plan else []
    return ", ".join(ids) or "–"


def _current(ctx: ReportContext, sec: Section, path: Path, what: str, target: str) -> dict | None:
    """The record at `path` if it exists and, when it names one, was written under the current freeze."""
    if not path.is_file():
        sec.missing.append(Missing(f"{what} ({path.relative_to(ctx.study.root)})", target))
        return None
    record = read_json(path)
    stamp = record.get("frozen_config_hash") if isinstance(record, dict) else None
    if stamp and ctx.frozen_hash and stamp != ctx.frozen_hash:
        sec.missing.append(
            Missing(f"{what} under the current freeze (the file is from {stamp[:12]})", target)
        )
        return None
    return record


def _reader_rows(ctx: ReportContext, sec: Section) -> list[list]:
    if not ctx.study.config.reader.cells:
        return []  # no answer stage configured
    record = _current(ctx, sec, reader_acceptance_path(ctx.study), "the reader's controls",
                      "make answer")
    if record is None:
        return []
    rows = []
    for name, entry in sorted(record["datasets"].items()):
        dataset = ctx.plan.datasets.get(name) if ctx.plan else None
        registered = dataset.reader_acceptance if dataset else None
        demoted = _tests(ctx, lambda t: t.dataset == name and is_answer_level(t.metric))
        metric = entry["metric"].partition("@")[0]
        for control, source, bound in (("positive", "own gold evidence", "positive_min"),
                                       ("negative", "another cluster's gold evidence", "negative_max")):
            value = entry[control]
            limit = None if registered is None else getattr(registered, bound)
            ok = (
                value is not None
                and limit is not None
                and (value >= limit if control == "positive" else value <= limit)
            )
            rows.append(
                [
                    f"reader ({name})",
                    f"{control} control: mean {metric} from {source} "
                    f"({entry[f'{control}_questions']} questions)",
                    _pct(value),
                    "not registered"
                    if limit is None
                    else f"{'>=' if control == 'positive' else '<='} {_pct(limit)}",
                    _result(ok),
                    demoted,
                ]
            )
    return rows


def _judge_rows(ctx: ReportContext, sec: Section) -> list[list]:
    judged = [t for f in ctx.plan.families for t in f.tests if t.acceptance is not None] if ctx.plan else []
    if not judged:
        return []
    record = _current(ctx, sec, judge_acceptance_path(ctx.study), "the judge's controls", "make answer")
    if record is None:
        return []
    rows = []
    for name in sorted({t.acceptance.judge for t in judged}):
        rates = record.get(name) or {}
        demoted = _tests(ctx, lambda t: t.acceptance is not None and t.acceptance.judge == name)
        bounds = sorted({(t.acceptance.positive_min, t.acceptance.negative_max) for t in judged
                         if t.acceptance.judge == name})
        for control, what, index, passes in (
                ("positive", "strict nugget recall of the accepted answer", 0, lambda v, b: v >= b),
                ("negative", "strict nugget recall of another question's answer", 1, lambda v, b: v <= b)):
            value = rates.get(control)
            sign = ">=" if index == 0 else "<="
            ok = value is not None and all(passes(value, b[index]) for b in bounds)
            rows.append(
                [
                    f"judge {name}",
                    f"{control} control: {what} ({rates.get(f'{control}_questions', 0)} questions)",
                    _pct(value),
                    " / ".join(f"{sign} {_pct(b[index])}" for b in bounds),
                    _result(ok),
                    demoted,
                ]
            )
        spot = rates.get("spot_check") or {}
        kappa = spot.get("kappa")
        rows.append([f"judge {name}", "human spot check: Cohen's kappa",
                     "no spot check on file" if kappa is None else f"{kappa:.2f}", f">= {KAPPA_MIN:g}",
                     _result(spot.get("passed") is True), demoted])
    return rows


def _embedder_rows(ctx: ReportContext) -> list[list]:
    folder = embeddings_dir(ctx.study)
    spaces = []
    for meta in sorted(folder.glob("*/namespace.json")) if folder.is_dir() else []:
        info = read_json(meta)
        if info.get("kind") in EMBEDDING_KINDS:
            spaces.append((info, meta.parent))
    rows = []
    for name, cfg in ctx.study.retrievers.items():
        model = getattr(cfg, "model", None)
        if not retriever_spec(cfg).embeds or model is None:  # late pooling embeds too
            continue
        mine = [d for info, d in spaces if info.get("model") == model]
        if not mine:
            rows.append(
                [
                    f"embedder of {name}",
                    "texts cut to the model window",
                    "nothing embedded yet",
                    "–",
                    "–",
                    "–",
                ]
            )
            continue
        cut = total = 0
        for directory in mine:
            for shard in sorted(directory.glob("*.npz")):
                with np.load(shard, allow_pickle=False) as z:
                    cut += int(z["truncated"].sum())
                    total += len(z["truncated"])
        rows.append([f"embedder of {name}", f"texts cut to the model window ({model})",
                     f"{cut} of {total} ({100 * cut / total:.1f}%)" if total else "0 of 0", "–", "–", "–"])
    return rows


def _rate(part: int, whole: int) -> str:
    return f"{part} of {whole} ({100 * part / whole:.1f}%)" if whole else f"{part} of 0"


def _retries(retries: int, calls: int) -> str:
    return f"{retries} retries" + (f" ({retries / calls:.2f} per call)" if calls else "")


def _llm_rows(ctx: ReportContext) -> list[list]:
    rows = []
    for name in ctx.study.config.datasets:
        for arm in arms_of(ctx, name):
            cost = ((arm_manifest(ctx, name, arm) or {}).get("llm") or {}).get("cost")
            if not cost:
                continue  # an LLM-free or unbuilt arm
            calls = int(cost.get("calls", 0))
            rows.append(
                [
                    f"indexing LLM, {arm} ({name})",
                    "failed calls; retries per call",
                    f"{_rate(int(cost.get('failed_calls', 0)), calls)}; "
                    f"{_retries(int(cost.get('retries', 0)), calls)}",
                    "–",
                    "–",
                    "–",
                ]
            )
    for cell in answer_cells(ctx.study) if ctx.study.config.reader.cells else []:
        path = answers_path(ctx.study, cell)
        if not path.is_file():
            continue
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        retries = sum(max(0, int(r.get("attempts", 1)) - 1) for r in records)
        rows.append([f"reader, {cell}", "failed answers; retries per answer",
                     f"{_rate(sum(bool(r.get('failed')) for r in records), len(records))}; "
                     f"{_retries(retries, len(records))}", "–", "–", "–"])
    return rows
