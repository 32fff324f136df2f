"""Report sections that show no outcome: study identity, data, chunk sets and costs."""

from __future__ import annotations

from harness.errors import HarnessError
from harness.files import read_json
from harness.provenance.timeline import first_outcome_time, timeline, utc_iso
from harness.report.context import ReportContext
from harness.report.model import Missing, Section, table
from harness.config.retrievers import retriever_spec
from harness.grid.cells import chunk_sets as grid_chunk_sets, configured_cells
from harness.grid.paths import answers_dir, chunk_manifest_path, results_dir

UNIT_LABEL = {"tokens": "tok", "words": "words"}  # the budget unit in column headers
QUESTION_INPUT, QUESTION_DROP = "questions_in_input", "questions_dropped_"
# count names of losses other than dropped questions (documents, evidence, gold ids), across adapters
OTHER_LOSS_MARKERS = ("dropped", "unlocated", "mismatch", "empty", "malformed", "out_of_range", "missing")


def identity(ctx: ReportContext) -> Section:
    sec = Section("identity", "Study identity")
    study = ctx.study
    if ctx.frozen_hash:
        sec.paragraphs.append(f"Study `{study.name}`; frozen config hash `{ctx.frozen_hash}`.")
    else:
        sec.missing.append(Missing("frozen_config.json (the study is not frozen)", "make freeze"))
    first = first_outcome_time(study)
    sec.paragraphs.append(f"First outcome written: {utc_iso(first) if first else 'none yet'}. Labels are "
                          "computed from registration times, never from a file's own claim.")
    entries = timeline(study)
    if not entries:
        sec.missing.append(Missing("plan/plan.yaml (write the plan first)", "make freeze"))
        return sec
    rows = []
    for e in entries:
        flags = ["claims before_outcomes: true" if e.claim_contradicted else "",
                 "edited since registration" if e.changed_since_registration else ""]
        rows.append([e.id, e.path, e.registered_at or "(no time)", e.time_source, e.label, e.sha256,
                     "; ".join(f for f in flags if f) or "–"])
    sec.tables.append(table("identity-timeline", "Plan and amendments in registration order, with SHA-256 "
                            "of each file and whether it was registered before any outcome.",
                            ["id", "file", "registered", "time from", "label", "sha256", "flags"], rows))
    return sec


def data(ctx: ReportContext) -> Section:
    sec = Section("data", "Data")
    if not ctx.datasets:
        sec.missing += list(ctx.problems.values()) or [Missing("loadable datasets", "make select")]
        return sec
    sec.missing += [m for k, m in ctx.problems.items() if k.startswith("dataset ")]
    rows = []
    for name, ds in ctx.datasets.items():
        strata: dict[str, list] = {}
        for q in ds.questions:
            strata.setdefault(q.stratum or "(all)", []).append(q)
        for stratum, qs in sorted(strata.items()):
            rows.append([name, stratum, len(qs), len({q.cluster for q in qs}),
                         sum(len([e for e in q.evidence if e.located]) for q in qs)])
        rows.append([name, "total", len(ds.questions), len({q.cluster for q in ds.questions}),
                     sum(len([e for e in q.evidence if e.located]) for q in ds.questions)])
    sec.tables.append(table("data-questions", "Questions and clusters (resampling units) per dataset and "
                            "stratum after selection, with located gold evidence items.",
                            ["dataset", "stratum", "questions", "clusters", "located evidence"], rows))
    drops = []
    for name, ds in ctx.datasets.items():
        counts = ds.counts
        drops.append([name, "questions in input", counts.get(QUESTION_INPUT, "–"), "–"])
        for key, value in counts.items():
            if key.startswith(QUESTION_DROP):
                drops.append([name, "question dropped", value, key[len(QUESTION_DROP):].replace("_", " ")])
        for key, value in counts.items():
            if not key.startswith(QUESTION_DROP) and any(m in key for m in OTHER_LOSS_MARKERS):
                drops.append([name, "other loss", value, key.replace("_", " ")])
        drops.append([name, "questions kept", counts.get("questions", len(ds.questions)), "–"])
        excluded = (ctx.selection or {}).get("datasets", {}).get(name, {}).get("excluded", [])
        if excluded:
            drops.append([name, "clusters excluded before the draw", len(excluded), "selection exclude list"])
    sec.tables.append(table("data-exclusions", "Every exclusion with its reason and count, from the loader's "
                            "counts (questions in input = kept + every questions_dropped_<reason>).",
                            ["dataset", "kind", "count", "reason"], drops, collapsed=True))
    return sec


def arm_manifest(ctx: ReportContext, dataset: str, arm: str) -> dict | None:
    path = chunk_manifest_path(ctx.study, dataset, arm)
    return read_json(path) if path.is_file() else None


def arms_of(ctx: ReportContext, dataset: str) -> list[str]:
    """Arms with a chunk set on this dataset (expansion arms have none: they rank their `of:` arm's)."""
    return [cs.arm.name for cs in grid_chunk_sets(ctx.study) if cs.dataset.name == dataset]


def cutting_embedders(ctx: ReportContext) -> list[str]:
    """The study's dense retrievers, whose embedders cut a text longer than their input window (under late
    pooling nothing is cut: a long document is encoded in overlapping windows)."""
    return [name for name, cfg in ctx.study.retrievers.items()
            if retriever_spec(cfg).embeds and getattr(cfg, "pooling", None) is None]


def over_window(ctx: ReportContext, dataset: str, arm: str, embedder: str) -> str:
    """The chunks of a chunk set the embedder cut to its window, out of those it indexed, as `score` recorded
    them in a cell ranking that chunk set with it ("–": no such cell scored)."""
    for cell in configured_cells(ctx.study):
        if cell.dataset.name != dataset or cell.arm.ranks.name != arm:
            continue
        found = ctx.cell_counts(dataset).get(str(cell), {}).get("embedder_window", {}).get(embedder)
        if found:
            over, indexed = found["over_window"], found["chunks"]
            return f"{over} ({100 * over / indexed:.1f}%)" if indexed else "0"
    return "–"


def chunk_sets(ctx: ReportContext) -> Section:
    sec = Section("chunk-sets", "Chunk sets")
    embedders = cutting_embedders(ctx)
    for name in ctx.datasets:
        budgets = ctx.budgets(name)
        unit = ctx.budget_unit
        rows, unbuilt = [], []
        for arm in arms_of(ctx, name):
            try:
                s = ctx.chunk_stats(name, arm)
            except HarnessError as e:
                unbuilt.append(f"{arm} ({str(e).split(';')[0]})")
                continue
            rows.append([arm, s.chunks, f"{s.mean_tokens:.1f}", f"{s.p95_tokens:.0f}"]
                        + [f"{100 * s.share_over[b]:.1f}%" for b in budgets]
                        + [f"{100 * s.share_spanning:.1f}% ({s.evidence_spanning}/{s.evidence_located})"
                           if s.share_spanning is not None else "–"]
                        + [f"{100 * s.cut_mid_sentence / s.chunks:.1f}%" if s.chunks else "–",
                           f"{s.tables_split}/{s.tables}" if s.tables else "–"]
                        + [over_window(ctx, name, arm, e) for e in embedders])
        if unbuilt:
            sec.missing.append(Missing(f"{name}: chunk sets not built under the current freeze: "
                                       + ", ".join(unbuilt), "make build-arms"))
        if rows:
            short = UNIT_LABEL[unit]
            sec.tables.append(
                table(
                    f"chunks-{name}",
                    f"Chunk sets of `{name}`: chunks, tokens (cl100k) per chunk, "
                    f"share of chunks longer than each budget in the study's budget unit ({unit}), "
                    "share of located gold evidence that no single chunk holds whole, and chunk health: "
                    "the share of chunks cut mid-sentence (ending inside a line, not after . ! or ?) and the "
                    "Markdown tables a chunk boundary splits"
                    + (", and per dense retriever the chunks longer than its embedder's input window "
                       "(counted by its own tokenizer, document prefix included; cut before encoding), of "
                       "those it indexed (–: no scored cell recorded it)" if embedders else "") + ".",
                    ["arm", "chunks", "mean tok", "p95 tok"]
                    + [f"> {b} {short}" for b in budgets]
                    + ["gold spanning chunks", "cut mid-sentence", "tables split"]
                    + [f"> window {e}" for e in embedders],
                    rows,
                )
            )
    if not ctx.datasets:
        sec.missing.append(Missing("loadable datasets", "make select"))
    return sec


def costs(ctx: ReportContext) -> Section:
    sec = Section("costs", "Costs")
    rows, unbuilt = [], []
    for name in ctx.study.config.datasets:
        for arm in arms_of(ctx, name):
            m = arm_manifest(ctx, name, arm)
            if m is None:
                unbuilt.append(f"{name}/{arm}")
                continue
            chunks = m["chunk_set"]["chunks"]
            if "llm" not in m:
                rows.append([name, arm, "(no LLM)", 0, 0, 0, "0.0000", "0.0000", 0, 0])
                continue
            c = m["llm"]["cost"]
            spend = float(c.get("cost_usd", 0.0))
            rows.append(
                [
                    name,
                    arm,
                    m["llm"].get("model", "–"),
                    c.get("calls"),
                    c.get("prompt_tokens"),
                    c.get("completion_tokens"),
                    f"{spend:.4f}",
                    f"{1000 * spend / chunks:.4f}" if chunks else "–",
                    c.get("failures"),
                    c.get("truncated_prompts"),
                ]
            )
    if unbuilt:
        sec.missing.append(Missing("manifests of " + ", ".join(unbuilt), "make build-arms"))
    if rows:
        sec.tables.append(
            table(
                "costs",
                "LLM cost per arm from the build manifests' spend ledger (counted from "
                "cache records, so a cache-warm rebuild reports what the paying run cost).",
                [
                    "dataset",
                    "arm",
                    "model",
                    "calls",
                    "input tok",
                    "output tok",
                    "spend USD",
                    "USD / 1,000 chunks",
                    "failures",
                    "truncations",
                ],
                rows,
            )
        )
    _estimate_beside_actual(ctx, sec)
    _answer_stage_costs(ctx, sec)
    return sec


# per role: (the cell count of its failures, the cell count of its truncations) in
# results/answers/summary.json
_ROLE_COUNTS = {
    "reader": ("reader_failed", "reader_truncated"),
    "judge": ("verdicts_unparseable", "judge_truncated"),
}


def _answer_stage_costs(ctx: ReportContext, sec: Section) -> None:
    """The reader and judge: spend per role from the answer stage's ledger, failures and truncations per
    answer cell (arm), from results/answers/summary.json."""
    if not ctx.study.config.reader.cells:
        return  # the study configures no answer stage
    path = answers_dir(ctx.study) / "summary.json"
    if not path.is_file():
        sec.missing.append(Missing("reader and judge costs (results/answers/summary.json)", "make answer"))
        return
    summary = read_json(path)
    if summary.get("frozen_config_hash") != ctx.frozen_hash:
        sec.missing.append(
            Missing(
                "reader and judge costs under the current freeze (results/answers/summary.json "
                f"is from {str(summary.get('frozen_config_hash'))[:12]})",
                "make answer",
            )
        )
        return
    cells = summary.get("cells", {})
    ledger = summary.get("ledger", {})
    rows = []
    for role, (failed, truncated) in _ROLE_COUNTS.items():
        if role not in ledger:
            continue
        c = ledger[role]
        rows.append(
            [
                role,
                (summary.get(role) or {}).get("model", "–"),
                c["calls"],
                c["fresh_calls"],
                c["cache_hits"],
                c["prompt_tokens"],
                c["completion_tokens"],
                f"{float(c['cost_usd']):.4f}",
                sum(counts.get(failed, 0) for counts in cells.values()),
                sum(counts.get(truncated, 0) for counts in cells.values()),
            ]
        )
    sec.tables.append(
        table(
            "costs-answer-stage",
            "Reader and judge spend from the answer stage's ledger (retries and the reader's and judge's "
            "acceptance controls included). Failures: reader answers that stayed unusable after the retries, "
            "judge "
            "verdicts that could not be parsed; truncations: reader contexts or judge prompts cut to the "
            "model's "
            "window; both summed over the answer cells (the control calls are not among them: the "
            "Instruments section shows the controls). `harness estimate` covers the indexing arms only, so "
            "no estimate stands beside these.",
            [
                "role",
                "model",
                "calls",
                "fresh calls",
                "cache hits",
                "input tok",
                "output tok",
                "spend USD",
                "failures",
                "truncations",
            ],
            rows,
        )
    )
    sec.tables.append(
        table(
            "costs-answer-cells",
            "The answer stage per cell (dataset / arm / retriever): questions answered, reader "
            "failures and truncations, judge truncations and unparseable verdicts.",
            [
                "cell",
                "questions",
                "answered",
                "reader failed",
                "reader truncated",
                "judge truncated",
                "verdicts unparseable",
            ],
            [
                [
                    cell,
                    n.get("questions"),
                    n.get("answered"),
                    n.get("reader_failed"),
                    n.get("reader_truncated"),
                    n.get("judge_truncated"),
                    n.get("verdicts_unparseable"),
                ]
                for cell, n in sorted(cells.items())
            ],
        )
    )


def _estimate_beside_actual(ctx: ReportContext, sec: Section) -> None:
    """`harness estimate`'s pre-build figures next to the spend ledger's, per paid arm."""
    path = results_dir(ctx.study) / "estimate.json"
    if not path.is_file():
        sec.missing.append(Missing("the pre-build cost estimate (results/estimate.json)", "make estimate"))
        return
    record = read_json(path)
    rows = []
    for e in record["arms"]:
        m = arm_manifest(ctx, e["dataset"], e["arm"])
        actual = (m or {}).get("llm", {}).get("cost", {})
        usd = "unpriced" if e["usd"] is None else f"{e['usd']:.4f}"
        rows.append([e["dataset"], e["arm"], e["calls"], actual.get("calls"), e["input_tokens"],
                     actual.get("prompt_tokens"), e["output_tokens"], actual.get("completion_tokens"), usd,
                     None if not actual else f"{float(actual.get('cost_usd', 0.0)):.4f}"])
    a = record["assumptions"]
    cap = record["spend_cap_usd"]
    sec.tables.append(
        table(
            "cost-estimate",
            "Cost estimated before any LLM call (`harness estimate`: prompts rendered and counted in "
            f"{a['tokenizer']}, first attempts only; output tokens per call: {a['output_tokens_per_call']}; "
            f"{a['summary_tokens_per_call']} tokens per previous summary) beside the spend ledger's actual "
            "figures "
            "(the model's own token counts, retries included; – where the arm is not built). Estimated total "
            f"${record['total_usd']:.4f}"
            + ("; no spend cap." if cap is None else f" against the cap ${cap:.4f}."),
            [
                "dataset",
                "arm",
                "calls est.",
                "calls actual",
                "input tok est.",
                "input tok actual",
                "output tok est.",
                "output tok actual",
                "USD est.",
                "USD actual",
            ],
            rows,
        )
    )
