"""Forest plot per family (PNG for results/stats, SVG for the report) from the family's JSON: estimates,
intervals, margins, verdicts."""

from __future__ import annotations

import io
import re
from typing import IO, Any

import matplotlib

matplotlib.use("Agg")  # headless and deterministic; never a GUI backend
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.layout_engine import PlaceHolderLayoutEngine  # noqa: E402

from harness.stats.families import FamilyResult  # noqa: E402
from harness.stats.tables import SMALL_MARK, contrast_label, retriever_label  # noqa: E402
from harness.stats.verdicts import (  # noqa: E402
    DIFFERENT, EQUIVALENT, INCONCLUSIVE, NO_DIFFERENCE, NO_VARIATION, TOO_FEW_CLUSTERS, UNDECIDED,
)

# the smallest text of a report figure, in points: 12 px at full size, so at least 11 px down to 92% (the
# report's figures keep to it; the PNGs under results/stats keep their own sizes)
REPORT_TEXT_PT = 9.0

_VERDICT_MARKERS = {EQUIVALENT: "D", DIFFERENT: "s", INCONCLUSIVE: "o", NO_DIFFERENCE: "o", NO_VARIATION: "x",
                    TOO_FEW_CLUSTERS: "x"}
_VERDICT_COLOURS = {
    EQUIVALENT: "#1b7837",
    DIFFERENT: "#b2182b",
    INCONCLUSIVE: "#7f7f7f",
    NO_DIFFERENCE: "#4d4d4d",
    NO_VARIATION: "#b35806",
    TOO_FEW_CLUSTERS: "#b35806",
}


def forest_png(fam: FamilyResult) -> bytes:
    """PNG bytes of the family's forest plot; the same JSON gives the same bytes."""
    fig = forest_figure(fam)
    buf = io.BytesIO()
    save_once(fig, buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def forest_svg(fam: FamilyResult, *, title: str | None = None, compact: bool = False) -> str:
    """The forest plot as a standalone SVG document (text as paths, no fonts or links), with the margin
    drawn as a shaded band; the same JSON gives the same text. `compact`: short row labels (the test id)
    and tighter rows, for many tests on one screen (the report's summary)."""
    fig = forest_figure(fam, margin_band=True, title=title, compact=compact, text_pt=REPORT_TEXT_PT)
    return svg_text(fig)


def svg_text(fig: Figure) -> str:
    """SVG of `fig` without the DOCTYPE line and the RDF metadata block (their URLs are never fetched, but a
    report must hold no URL), with fixed ids and no date, so reruns give identical files."""
    buf = io.StringIO()
    with plt.rc_context({"svg.hashsalt": "harness", "svg.fonttype": "path"}):
        save_once(fig, buf, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", buf.getvalue(), flags=re.S)
    return "\n".join(line for line in text.splitlines() if not line.startswith("<!DOCTYPE")
                     and "DTD/svg11.dtd" not in line) + "\n"


def save_once(fig: Figure, buf: IO[Any], **savefig: Any) -> None:
    """fig.savefig, drawing the figure once. fig.tight_layout() leaves a placeholder layout engine behind,
    and with any engine in place savefig first draws the whole figure to lay it out (which a placeholder
    does not do) and then draws it again into the file; without one it draws only into the file."""
    if isinstance(fig.get_layout_engine(), PlaceHolderLayoutEngine):
        with plt.rc_context({"figure.autolayout": False}):  # with it on, None would set a tight engine
            fig.set_layout_engine(None)
    fig.savefig(buf, **savefig)


def forest_figure(fam: FamilyResult, *, margin_band: bool = False, title: str | None = None,
                  compact: bool = False, text_pt: float | None = None) -> Figure:
    """The family's forest plot as a matplotlib figure (the caller closes it). Rows whose rule shows the 90%
    CI (TOST) get it drawn thick over the 95% one. `text_pt`: no text smaller (None: the PNG's sizes)."""
    small = 8 if text_pt is None else max(8, text_pt)
    # None: matplotlib's default size (10), so the PNG under results/stats stays as it was
    sized: dict[str, Any] = {} if text_pt is None else {"fontsize": max(10, text_pt)}
    if not fam.ran:
        raise ValueError(f"family {fam.family!r} was not run; there is nothing to plot")
    # missing tests (no contrast) are listed in the tables
    rows = [(r, r.contrast) for r in fam.rows if r.contrast is not None]
    any_tost = any(r.ci_shown == "90" for r, _ in rows)
    size = (6.4, 1.3 + 0.18 * len(rows)) if compact else (8.0, 1.2 + 0.45 * len(rows))
    fig, ax = plt.subplots(figsize=size, dpi=120)
    for y, (row, c) in enumerate(reversed(rows)):
        colour = _VERDICT_COLOURS.get(row.verdict, "black")
        lo95, hi95 = c.ci95_bca
        ax.plot([lo95, hi95], [y, y], color=colour, linewidth=1.0)
        if row.ci_shown == "90":
            lo90, hi90 = c.ci90_bca
            ax.plot([lo90, hi90], [y, y], color=colour, linewidth=3.5, solid_capstyle="butt")
        if row.margin is not None:
            m = row.margin
            if margin_band:
                ax.fill_between([-m, m], y - 0.4, y + 0.4, color="#2166ac", alpha=0.12, linewidth=0)
            ax.plot([-m, m], [y, y], linestyle="none", marker="|", markersize=14, color="#2166ac")
        ax.plot([c.estimate], [y], marker=_VERDICT_MARKERS.get(row.verdict, "o") if margin_band else "o",
                color=colour, markersize=6 if margin_band else 5)
        label = row.verdict + (SMALL_MARK if row.small_difference_within_margin else "")
        ax.annotate(label, xy=(1.01, y), xycoords=("axes fraction", "data"), va="center", color=colour,
                    **sized)
    ax.axvline(0.0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r.test if compact else
                        f"{r.test}: {contrast_label(r)} ({r.dataset}, {retriever_label(r)}, {r.metric})"
                        for r, _ in reversed(rows)], fontsize=small)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    shown = "thick: 90% BCa CI (TOST rows), thin: 95%, blue ticks: ±margin" if any_tost else "95% BCa CI"
    ax.set_xlabel(f"A - B (points); {shown}", **sized)
    if text_pt is not None:
        ax.tick_params(axis="x", labelsize=sized["fontsize"])
    ax.set_title(title or f"{fam.family} ({fam.tier}, {fam.multiplicity})", fontsize=10)
    if margin_band and any_tost:
        ax.set_xlabel(f"A - B (points); {shown.replace('blue ticks', 'blue band and ticks')}\n"
                      "marker: diamond equiv., square diff., circle incon./n.d."
                      + (", cross no verdict" if any(r.verdict in UNDECIDED for r, _ in rows) else ""),
                      fontsize=small)
    fig.tight_layout()
    return fig
