"""Budget-sweep figures: each budgeted metric against the token budget, one line and CI band per arm."""

from __future__ import annotations

import re

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")  # headless and deterministic; never a GUI backend
import matplotlib.pyplot as plt  # noqa: E402

from harness.report.means import ArmMean  # noqa: E402
from harness.stats.plots import REPORT_TEXT_PT, svg_text  # noqa: E402

_BUDGETED = re.compile(r"^(?P<name>[a-z_]+)@(?P<budget>\d+)[tw]$")  # t: token budgets, w: word budgets
# complete and partial recall first and side by side, as the issue asks; other budgeted metrics follow
_ORDER = ("complete", "partial", "rec", "prec", "answer_f1", "nugget_recall")


def budgeted(metric: str) -> tuple[str, int] | None:
    m = _BUDGETED.match(metric)
    return (m["name"], int(m["budget"])) if m else None


def sweep_metrics(means: list[ArmMean]) -> list[str]:
    """Metric names with at least two budgets, in display order."""
    budgets: dict[str, set[int]] = {}
    for m in means:
        b = budgeted(m.metric)
        if b:
            budgets.setdefault(b[0], set()).add(b[1])
    names = [n for n, bs in budgets.items() if len(bs) >= 2]
    return sorted(names, key=lambda n: (_ORDER.index(n) if n in _ORDER else len(_ORDER), n))


def budget_sweep_svg(means: list[ArmMean], *, dataset: str, retriever: str, arm_order: list[str] = ()) -> str:
    """One panel per swept metric; `means` may hold other cells, which are ignored. Arms follow
    `arm_order` (the config's order), unknown ones after it."""
    cells = [m for m in means if m.dataset == dataset and m.retriever == retriever and budgeted(m.metric)]
    names = sweep_metrics(cells)
    if not names:
        raise ValueError(f"{dataset}/{retriever}: no metric is measured at two or more token budgets")
    order = list(arm_order)
    arms = sorted(
        dict.fromkeys(m.arm for m in cells), key=lambda a: (order.index(a) if a in order else len(order), a)
    )
    fig, axes = plt.subplots(1, len(names), figsize=(3.4 * len(names) + 1.6, 3.2), dpi=100, squeeze=False)
    colours = plt.get_cmap("tab10")
    for ax, name in zip(axes[0], names):
        for i, arm in enumerate(arms):
            pts = sorted(
                (budgeted(m.metric)[1], m) for m in cells if m.arm == arm and budgeted(m.metric)[0] == name
            )
            if not pts:
                continue
            xs = [b for b, _ in pts]
            ax.fill_between(xs, [m.ci95[0] for _, m in pts], [m.ci95[1] for _, m in pts],
                            color=colours(i % 10), alpha=0.15, linewidth=0)
            ax.plot(xs, [m.mean for _, m in pts], marker="o", markersize=3, color=colours(i % 10), label=arm)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted({budgeted(m.metric)[1] for m in cells if budgeted(m.metric)[0] == name}))
        ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.set_title(name, fontsize=REPORT_TEXT_PT + 1)
        ax.set_xlabel(
            f"{'word' if cells[0].metric.endswith('w') else 'token'} budget", fontsize=REPORT_TEXT_PT
        )
        ax.set_ylabel("mean (points), 95% CI band", fontsize=REPORT_TEXT_PT)
    axes[0][-1].legend(fontsize=REPORT_TEXT_PT, loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
    fig.suptitle(f"{dataset}, {retriever}", fontsize=10)
    fig.tight_layout()
    return svg_text(fig)
