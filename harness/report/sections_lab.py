"""Report section for chunking-lab studies (docs/chunking-lab.md): results per split, and the chunk-size
sweep.

Shown for datasets with a train / held-out split (adapter question_evidence): partial and complete recall
per arm, retriever, budget and split (plain means over questions, descriptive), with the number of the arm's
chunks larger than the budget (measured in the budget's unit; under `skip` such a chunk can never enter the
context). Arms swept over L (`<arm>@L<value>`) get a figure of complete and partial recall against L, per
arm and retriever, at the plan's primary budget.
"""

from __future__ import annotations

import re

from harness.arms.build import read_chunk_set
from harness.config.lab import SWEEP_SEPARATOR, UNIT_SUFFIX
from harness.data.question_evidence import SPLITS
from harness.errors import HarnessError
from harness.grid.cells import arm_spec
from harness.metrics.assembly import size_in_unit
from harness.metrics.budget import TokenCache
from harness.report.context import ReportContext
from harness.report.figures import plt, svg_text
from harness.stats.plots import REPORT_TEXT_PT
from harness.report.model import Figure, Missing, Section, points, table
from harness.report.sections_outcomes import withheld

_METRIC = re.compile(r"^(partial|complete)@(\d+)([tw])$")


def _split_datasets(ctx: ReportContext) -> list[str]:
    return [n for n, d in ctx.study.config.datasets.items() if d.adapter == "question_evidence"]


def _oversized(
    ctx: ReportContext, dataset: str, arm: str, budgets: list[int], unit: str
) -> dict[int, int] | None:
    try:
        chunks = read_chunk_set(ctx.study, ctx.datasets[dataset], arm_spec(ctx.study, arm),
                                frozen_hash=ctx.frozen_hash)
    except (HarnessError, KeyError):
        return None
    cache = TokenCache() if unit == "tokens" else None
    sizes = [size_in_unit(c.text, unit, cache) for c in chunks]
    return {b: sum(s > b for s in sizes) for b in budgets}


def lab_results(ctx: ReportContext) -> Section | None:
    """None (no section) for a study without a train / held-out split."""
    names = _split_datasets(ctx)
    if not names:
        return None
    sec = Section("lab", "Chunking lab: per split and chunk-size sweep")
    if withheld(ctx, sec):
        return sec
    table_ = ctx.per_question
    if table_ is None:
        sec.missing.append(Missing("per-question results", "make score"))
        return sec
    suffix = UNIT_SUFFIX[ctx.budget_unit]
    for dataset in names:
        rows = table_[(table_["dataset"] == dataset) & table_["metric"].str.match(_METRIC.pattern)]
        parts = rows["metric"].str.extract(_METRIC.pattern)
        rows = rows.assign(kind=parts[0], budget=parts[1].astype(int))
        means = rows.groupby(["arm", "retriever", "budget", "kind", "stratum"], sort=False)["value"].mean()
        counts = rows.groupby("stratum")["qid"].nunique()
        budgets = sorted(rows["budget"].unique().tolist())
        out = []
        for arm in dict.fromkeys(rows["arm"]):
            over = _oversized(ctx, dataset, arm, budgets, ctx.budget_unit)
            for retriever in dict.fromkeys(rows.loc[rows["arm"] == arm, "retriever"]):
                for b in budgets:
                    cells = [
                        points(100 * means[arm, retriever, b, k, s])
                        if (arm, retriever, b, k, s) in means
                        else "–"
                        for s in SPLITS
                        for k in ("partial", "complete")
                    ]
                    out.append([arm, retriever, f"{b}{suffix}", *cells, "–" if over is None else over[b]])
        header = ["arm", "retriever", "budget"] + [f"{s} ({counts.get(s, 0)}) {k}" for s in SPLITS
                                                   for k in ("partial", "complete")] + ["chunks > budget"]
        sec.tables.append(
            table(
                f"lab-splits-{dataset}",
                f"`{dataset}`: partial and complete recall in points per split (plain means "
                "over questions; the QES arms were built from the train split only). `chunks > budget` "
                "counts the "
                "arm's chunks longer than the budget, which can never enter the context whole.",
                header,
                out,
            )
        )
        figure = _l_sweep(ctx, dataset, rows)
        if figure is not None:
            sec.figures.append(figure)
    return sec


def _primary_budget(ctx: ReportContext, dataset: str, budgets: list[int]) -> int:
    plan = ctx.plan.datasets.get(dataset) if ctx.plan else None
    m = _METRIC.match(plan.primary_metric.replace("rec@", "partial@", 1)) if plan else None
    return int(m.group(2)) if m and int(m.group(2)) in budgets else budgets[len(budgets) // 2]


def _l_sweep(ctx: ReportContext, dataset: str, rows) -> Figure | None:
    swept = rows[rows["arm"].str.contains(SWEEP_SEPARATOR, regex=False)]
    if swept.empty:
        return None
    budget = _primary_budget(ctx, dataset, sorted(rows["budget"].unique().tolist()))
    swept = swept[swept["budget"] == budget]
    split = swept["arm"].str.rsplit(SWEEP_SEPARATOR, n=1, expand=True)
    swept = swept.assign(base=split[0], L=split[1].astype(int))
    means = swept.groupby(["kind", "base", "retriever", "L"])["value"].mean()
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.4), dpi=100, squeeze=False)
    colours = plt.get_cmap("tab10")
    series = list(dict.fromkeys(zip(swept["base"], swept["retriever"])))
    retrievers = list(dict.fromkeys(swept["retriever"]))
    bases = list(dict.fromkeys(swept["base"]))
    for ax, kind in zip(axes[0], ("complete", "partial")):
        for base, retriever in series:
            pts = means[kind, base, retriever].sort_index()
            ax.plot(
                pts.index,
                100 * pts.values,
                marker="o",
                markersize=3,
                color=colours(bases.index(base) % 10),
                linestyle=("-", "--", ":", "-.")[retrievers.index(retriever) % 4],
                label=f"{base} / {retriever}",
            )
        ax.set_title(f"{kind}@{budget}", fontsize=REPORT_TEXT_PT + 1)
        ax.set_xlabel("chunk length L (characters)", fontsize=REPORT_TEXT_PT)
        ax.set_ylabel("points", fontsize=REPORT_TEXT_PT)
        ax.tick_params(labelsize=REPORT_TEXT_PT)
    axes[0][1].legend(fontsize=REPORT_TEXT_PT, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    svg = svg_text(fig)  # closes the figure
    return Figure(
        f"lab-l-sweep-{dataset}",
        f"`{dataset}`: complete and partial recall at budget {budget} against "
        "the chunk length L, per arm (colour) and retriever (line style); plain means over all questions.",
        svg,
    )
