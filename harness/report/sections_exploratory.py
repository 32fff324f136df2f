"""Report section: the plan's exploratory analyses, read from results/stats/analyses/<id>.json.

Each ran analysis is a table (CSV and LaTeX too) and, for group analyses, a figure of group means with
95% CIs per retriever; a blocked one names its missing input and the make target that produces it.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from harness.analyses.run import RAN  # noqa: E402
from harness.files import read_json  # noqa: E402
from harness.report.context import ReportContext  # noqa: E402
from harness.report.model import Figure, Missing, Section, interval, points, table  # noqa: E402
from harness.report.sections_outcomes import withheld  # noqa: E402
from harness.stats.plots import REPORT_TEXT_PT, svg_text  # noqa: E402
from harness.grid.paths import stats_dir  # noqa: E402

_SHARES = ("win", "tie", "loss")


def exploratory(ctx: ReportContext) -> Section:
    sec = Section("exploratory", "Exploratory analyses")
    if withheld(ctx, sec):
        return sec
    entries = ctx.plan.analyses if ctx.plan is not None else ()
    if not entries:
        sec.paragraphs.append(
            "The plan registers no exploratory analysis (`exploratory:` in plan/plan.yaml)."
        )
        return sec
    sec.paragraphs.append(
        "Exploratory by construction: no multiplicity adjustment and no verdict. Differences "
        "in points; group CIs are 95% BCa cluster bootstrap, contrasts between groups 95% "
        "percentile cluster bootstrap (clusters resampled once for both groups)."
    )
    folder = stats_dir(ctx.study) / "analyses"
    for entry in entries:
        path = folder / f"{entry.id}.json"
        if not path.is_file():
            sec.missing.append(Missing(f"exploratory analysis {entry.id} ({entry.analysis})", "make stats"))
            continue
        record = read_json(path)
        if record["status"] != RAN:
            sec.missing += [Missing(f"analysis {entry.id} is blocked: {m['what']}", m["target"])
                            for m in record["missing"]]
            continue
        excluded = record.get("excluded") or {}
        notes = (
            [
                "Questions without a value: "
                + "; ".join(f"{k}: {v}" for k, v in sorted(excluded.items()))
                + "."
            ]
            if excluded
            else []
        )
        sec.tables.append(
            table(
                f"exploratory-{entry.id}",
                f"{entry.id}: {record['description']}",
                [c.replace("_", " ") for c in record["columns"]],
                [[_cell(c, row.get(c)) for c in record["columns"]] for row in record["rows"]],
                notes,
            )
        )
        if "group" in record["columns"]:
            sec.figures.append(
                Figure(
                    f"exploratory-{entry.id}",
                    f"{entry.id}: group means and contrasts with 95% CIs, per retriever (points).",
                    _groups_svg(record),
                )
            )
    return sec


def _cell(column: str, value):
    if value is None:
        return None
    if column == "ci95":
        return interval(value)
    if column in _SHARES:
        return f"{100 * value:.1f}%"
    if isinstance(value, float):
        return points(value)
    return value


def _groups_svg(record: dict) -> str:
    rows = [r for r in record["rows"] if r.get("estimate") is not None]
    retrievers = list(dict.fromkeys(r["retriever"] for r in rows))
    fig, axes = plt.subplots(1, len(retrievers), figsize=(3.6 * len(retrievers) + 0.6, 0.45 * 4 + 1.2),
                             dpi=100, squeeze=False)
    for ax, retriever in zip(axes[0], retrievers):
        mine = [r for r in rows if r["retriever"] == retriever]
        ys = list(range(len(mine)))[::-1]
        for y, r in zip(ys, mine):
            lo, hi = r["ci95"]
            ax.plot([lo, hi], [y, y], color="#555")
            ax.plot([r["estimate"]], [y], "o", color="#c33" if " minus " in r["group"] else "#236")
        ax.axvline(0, color="#999", linewidth=0.8)
        ax.set_yticks(ys)
        ax.set_yticklabels([r["group"] for r in mine], fontsize=REPORT_TEXT_PT)
        ax.set_title(retriever, fontsize=REPORT_TEXT_PT + 1)
        ax.set_xlabel("points", fontsize=REPORT_TEXT_PT)
    fig.tight_layout()
    return svg_text(fig)
