"""Robustness to repeated generations (docs/analyses.md): for each registered test on an arm with `repeats`,
the estimate of every generation run, their SD and range, and the pooled estimate with its CI (the registered
test itself, read from the family's statistics). Also each run's seeds and calls, from the build manifests.

The per-repeat estimates come from harness.stats.spread over the rows score keeps per repeat; the section
does not apply to a study without repeated arms.
"""

from __future__ import annotations

import pandas as pd

from harness.arms.repeats import repeat_count, repeat_variant
from harness.errors import HarnessError
from harness.grid.cells import chunk_sets
from harness.grid.paths import per_question_dir, variants_part_path
from harness.grid.states import chunk_set_manifest
from harness.pipeline.parts import read_variants_part
from harness.report.context import ReportContext
from harness.report.model import Missing, Section, interval, points, table
from harness.report.sections_outcomes import families, withheld
from harness.stats.contrast import as_results
from harness.stats.spread import repeat_spread
from harness.stats.tables import contrast_label


def repeated_arms(study) -> dict[str, list[str]]:
    """arm -> its repeat variants (r0, r1, ...), for every arm generated more than once."""
    return {arm: [repeat_variant(r) for r in range(repeat_count(cfg))]
            for arm, cfg in study.arms.items() if repeat_count(cfg) > 1}


def repeat_generations(ctx: ReportContext) -> Section | None:
    repeated = repeated_arms(ctx.study)
    if not repeated:
        return None
    sec = Section("repeats", "Robustness: repeat generations")
    sec.paragraphs.append(
        "An arm with repeats is generated several times (repeat 0 as configured, each further repeat with "
        "shifted seeds); every registered test reads its per-question values averaged over the repeats. "
        "Below, "
        "each such test is also taken once per repeat on the same questions: the spread across runs is "
        "variation "
        "the pooled CI (which covers the sampling of questions) does not show."
    )
    runs = _run_table(ctx, repeated, sec)
    if runs is not None:
        sec.tables.append(runs)
    if withheld(ctx, sec):
        return sec
    if ctx.plan is None:
        sec.missing.append(Missing("plan/plan.yaml (write the plan first)", "make freeze stats"))
        return sec
    tests = [
        (fam.id, t) for fam in ctx.plan.families for t in fam.tests if t.a in repeated or t.b in repeated
    ]
    if not tests:
        sec.paragraphs.append("No registered test compares a repeated arm ("
                              + ", ".join(repeated) + "), so there is no spread to report.")
        return sec
    released, missing = families(ctx)
    pooled = {row.test: row.contrast for fam in released for row in fam.rows}
    sec.missing += [m for m in missing if any(f"family {fid}" in m.what for fid, _ in tests)]
    if ctx.per_question is None:
        sec.missing.append(Missing("per-question results", "make score"))
        return sec
    variants, lacking = _variant_rows(ctx, tests, repeated)
    if lacking:
        sec.missing.append(Missing("per-repeat results of " + ", ".join(lacking), "make score"))
        return sec
    combined = as_results(pd.concat([ctx.per_question, variants], ignore_index=True))  # read by every test
    rows = []
    for family_id, test in tests:
        contrast = pooled.get(test.id)  # None: no statistics, or a missing row
        if contrast is None:
            sec.missing.append(Missing(f"pooled result of test {test.id} (family {family_id})", "make stats"))
            continue
        try:
            spread = repeat_spread(combined, test, repeated)
        except HarnessError as e:
            sec.missing.append(Missing(f"per-repeat contrast of test {test.id} ({e})", "make score"))
            continue
        rows.append([test.id, test.dataset, contrast_label(test), test.metric, spread.n_questions,
                     "; ".join(f"{v} {e:+.1f}" for v, e in zip(spread.repeats, spread.estimates)),
                     points(spread.sd, 2), f"[{spread.low:+.1f}, {spread.high:+.1f}]",
                     f"{contrast.estimate:+.1f}", interval(contrast.ci95_bca)])
    if rows:
        sec.tables.append(
            table(
                "repeat-spread",
                "Between-run spread of each registered contrast on a repeated arm (points, A - B): "
                "the estimate per repeat, their standard deviation (n - 1) and range, and the pooled "
                "contrast (the "
                "registered test, on per-question values averaged over repeats) with its 95% BCa CI.",
                [
                    "test",
                    "dataset",
                    "contrast",
                    "metric",
                    "questions",
                    "per repeat",
                    "SD",
                    "range",
                    "pooled",
                    "pooled 95% CI",
                ],
                rows,
                notes=(
                    "The mean of the per-repeat estimates equals the pooled estimate: pooling is a "
                    "per-question "
                    "mean over repeats.",
                ),
            )
        )
    return sec


def _run_table(ctx: ReportContext, repeated: dict[str, list[str]], sec: Section):
    rows, unbuilt = [], []
    configured = {cs.names: cs for cs in chunk_sets(ctx.study)}
    for dataset in ctx.study.config.datasets:
        for arm in repeated:
            cs = configured.get((dataset, arm))
            if cs is None:
                continue
            manifest = chunk_set_manifest(ctx.study, cs)
            per_repeat = ((manifest or {}).get("llm") or {}).get("per_repeat")
            if per_repeat is None:
                unbuilt.append(str(cs))
                continue
            for name, run in per_repeat.items():
                calls = run["calls"]
                rows.append(
                    [
                        dataset,
                        arm,
                        name,
                        ", ".join(map(str, run["seeds"])),
                        run["chunks"],
                        calls["calls"],
                        calls["fresh_calls"],
                        calls["cache_hits"],
                        run["failures"],
                        run["retries"],
                    ]
                )
    if unbuilt:
        sec.missing.append(Missing("repeated chunk sets " + ", ".join(unbuilt), "make build-arms"))
    if not rows:
        return None
    return table(
        "repeat-runs",
        "Generation runs of each repeated arm: the seeds of the first attempt and of the "
        "retries, chunks, LLM calls (fresh and from the cache, as counted when the chunk set was last "
        "built), chunks left failed and retries.",
        ["dataset", "arm", "repeat", "seeds", "chunks", "calls", "fresh", "cached", "failed", "retries"],
        rows,
    )


def _variant_rows(ctx: ReportContext, tests, repeated) -> tuple[pd.DataFrame, list[str]]:
    """The per-repeat rows of every cell the tests read on a repeated arm; cells without them are named."""
    cells = []
    for _, test in tests:
        for arm, retriever in ((test.a, test.retriever), (test.b, test.retriever_b or test.retriever)):
            if arm in repeated and (test.dataset, arm, retriever) not in cells:
                cells.append((test.dataset, arm, retriever))
    folder = per_question_dir(ctx.study)
    frames, lacking = [], []
    for cell in cells:
        if variants_part_path(folder, *cell).is_file():
            frames.append(read_variants_part(folder, *cell))
        else:
            lacking.append("/".join(cell))
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()), lacking
