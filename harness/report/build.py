"""Assemble results/report/report.md from what the earlier stages wrote (never restated by hand).

Every figure comes from a manifest or the statistics JSON; outcome aggregates (the verdict summary)
appear only when `outcomes_allowed` says every configured cell is scored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.pipeline.grid import BUILT, MISSING, per_question_sidecar
from harness.pipeline.status import ChunkSetStatus, grid_status
from harness.provenance.files import atomic_write_text, read_json
from harness.provenance.interim import describe_missing, outcomes_allowed
from harness.provenance.timeline import first_outcome_time, format_timeline, timeline
from harness.study import Study


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join("" if v is None else str(v) for v in row) + " |" for row in rows]
    return out + [""]


def _chunk_rows(study: Study, sets: list[ChunkSetStatus]) -> tuple[list[list[Any]], list[list[Any]]]:
    """One row per chunk set of the grid; a set built under another freeze is shown as stale, not used."""
    chunk_rows, llm_rows = [], []
    for s in sets:
        arm = s.chunk_set.arm
        if s.state != BUILT:
            shown = "(not built)" if s.state == MISSING else f"({s.state})"
            chunk_rows.append([arm, shown] + [None] * 6)
            continue
        m = read_json(study.manifest_path(*s.chunk_set))
        cs = m["chunk_set"]
        chunk_rows.append([
            arm, cs["chunks"], cs["length_tokens"]["median"], cs["length_tokens"]["p90"], cs["length_tokens"]["max"],
            cs["chunks_over_512_tokens"], cs["chunks_spanning_sections"], len(cs["documents_without_chunks"]),
        ])
        if "llm" in m:
            cost, keys = m["llm"]["cost"], m["llm"].get("keys", {})
            llm_rows.append([
                arm, m["llm"]["model"], cost.get("calls"), cost.get("prompt_tokens"), cost.get("completion_tokens"),
                cost.get("failures"), cost.get("retries"), cost.get("truncated_prompts"), cost.get("cost_usd"),
                keys.get("distinct_keys"), keys.get("reuse_rate"),
            ])
    return chunk_rows, llm_rows


def build_report(study: Study) -> Path:
    lines = [f"# Study report: {study.name}", ""]
    if study.frozen_path.is_file():
        from harness.provenance.freeze import frozen_hash

        lines += [f"Frozen config: `{frozen_hash(study)}`", ""]
    status = grid_status(study)
    first = first_outcome_time(study)
    lines += ["## Registration timeline", "", "```", format_timeline(timeline(study), first), "```", ""]
    for dataset in study.datasets:
        lines += [f"## Dataset `{dataset}`", ""]
        sidecar = per_question_sidecar(study, dataset)
        counts = None
        if sidecar.is_file():
            side = read_json(sidecar)
            counts = side["dataset_counts"]
            lines += [f"Scored: {side['questions']} questions in {side['clusters']} clusters, "
                      f"{len(side['cells'])} cells, budgets {side['budgets']}.", ""]
        if counts:
            lines += ["Input counts (drops, misses, normalisations):", ""]
            lines += _table(["count", "value"], [[k, v] for k, v in counts.items()])
        chunk_rows, llm_rows = _chunk_rows(study, [s for s in status.chunk_sets if s.chunk_set.dataset == dataset])
        lines += ["### Chunk sets", ""]
        lines += _table(["arm", "chunks", "median tok", "p90 tok", "max tok", ">512 tok", "span 2+ sections",
                         "docs w/o chunks"], chunk_rows)
        if llm_rows:
            lines += ["### LLM cost and key diagnostics", ""]
            lines += _table(["arm", "model", "calls", "tokens in", "tokens out", "failures", "retries",
                             "truncated", "cost USD", "distinct keys", "key reuse"], llm_rows)
    allowed, missing = outcomes_allowed(study)
    lines += ["## Verdicts", ""]
    summary = study.stats_dir / "summary.md"
    if not allowed:
        lines += [f"Withheld (no interim looks): {describe_missing(missing)}.", ""]
    elif summary.is_file():
        lines += [summary.read_text(encoding="utf-8"), ""]
    else:
        lines += ["Not computed yet: run `harness stats`.", ""]
    out = study.results / "report" / "report.md"
    atomic_write_text(out, "\n".join(lines).rstrip() + "\n")
    return out
