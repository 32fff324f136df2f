"""Markdown, CSV and LaTeX tables generated from a family's JSON (never restated by hand)."""

from __future__ import annotations

import csv
import io
from typing import Any, Mapping, Protocol

from harness.stats.contrast import INTERVALS
from harness.stats.decided import DecidedRow
from harness.stats.families import FamilyResult
from harness.stats.rules import rule
from harness.stats.verdicts import MISSING

# CSV columns: the row fields, intervals split into lo/hi
CSV_COLUMNS = (
    "test",
    "rule",
    "a",
    "b",
    "dataset",
    "retriever",
    "retriever_b",
    "metric",
    "n_questions",
    "n_clusters",
    "n_strata",
    "estimate",
    "ci90_bca_lo",
    "ci90_bca_hi",
    "ci95_bca_lo",
    "ci95_bca_hi",
    "ci90_percentile_lo",
    "ci90_percentile_hi",
    "ci95_percentile_lo",
    "ci95_percentile_hi",
    "z0",
    "acceleration",
    "resamples",
    "seed",
    "margin",
    "p_tost",
    "p_tost_holm",
    "p_signflip",
    "p_signflip_holm",
    "signflip_exact",
    "signflip_flips",
    "se_cluster",
    "mdd",
    "verdict",
    "small_difference_within_margin",
    "ci_shown",
    "tier",
    "source",
    # appended, so readers of the earlier columns by position keep working
    "verdict_reason",
    "no_variation",
    "ci90_t_lo",
    "ci90_t_hi",
    "p_tost_t",
    "t_df",
    "t_tost_disagrees",
)
SMALL_MARK = "†"
T_TOST_MARK = "‡"  # the bootstrap TOST and the t-TOST disagree about equivalence


def caption(fam: FamilyResult) -> str:
    kinds = sorted({r.rule for r in fam.rows}) if fam.rows else [fam.rule]
    adjust = (f"Holm over {fam.n_tests} (p Holm)" if fam.multiplicity == "holm"
              else "unadjusted, no multiplicity correction")
    demoted = f", {fam.demoted}" if fam.demoted else ""
    return (
        f"Family {fam.family} ({fam.tier}{demoted}, {fam.source}): {fam.description} "
        f"A - B in points (x100); {'; '.join(rule(k).caption(fam.signflip_required) for k in kinds)}; "
        f"p-values {adjust}; alpha {fam.alpha}; MDD: minimum detectable difference, 80% power at alpha from "
        f"the cluster standard error; BCa cluster bootstrap, {fam.resamples} resamples, family seed "
        f"{fam.seed}."
    )


_HEADER = ("test", "A - B", "dataset", "retriever", "metric", "questions (clusters)", "estimate", "CI",
           "level", "margin", "MDD", "p TOST", "p TOST Holm", "p t-TOST", "p sign-flip", "p sign-flip Holm",
           "verdict")


def _cells(row: DecidedRow) -> list[str]:
    head = [row.test, contrast_label(row), row.dataset, retriever_label(row), row.metric]
    margin = "-" if row.margin is None else f"±{_num(row.margin)}"
    c = row.contrast
    if c is None:
        return head + ["-", "-", "-", "-", margin, "-", "-", "-", "-", "-", "-", MISSING]
    # the Holm-adjusted sign-flip p is shown for TOST rows too: it does not decide them, but readers
    # compare it with the TOST result (e.g. a diff. by the CI rule that does not survive Holm)
    return head + [f"{c.n_questions} ({c.n_clusters})", _num(c.estimate), _ci(row.shown_ci),
                   f"{row.ci_shown}%", margin, _mdd(row), _p(c.p_tost), _p(row.p_tost_holm),
                   t_tost_cell(row), _p(c.p_signflip), _p(row.p_signflip_holm), _verdict(row)]


def t_tost_cell(row: DecidedRow) -> str:
    """The t-TOST p of a TOST row, marked where it disagrees with the bootstrap TOST; "-" elsewhere (and in
    statistics written before the column existed)."""
    p = None if row.contrast is None else row.contrast.p_tost_t
    return _p(p) + (T_TOST_MARK if row.t_tost_disagrees else "")


def t_tost_notes(fam: FamilyResult) -> list[str]:
    """The sensitivity column's legend, on a family with TOST rows."""
    if not any(row.contrast is not None and row.contrast.p_tost_t is not None for row in fam.rows):
        return []
    # the legend keeps the module name released tables always carried (now harness.inference.t_tost)
    note = ("p t-TOST: sensitivity only, never a decision input: the TOST p from a cluster-robust t interval "
            "(clusters - strata degrees of freedom; harness.stats.t_tost).")
    if any(row.t_tost_disagrees for row in fam.rows):
        note += (f" {T_TOST_MARK} the bootstrap TOST and the t-TOST disagree about equivalence at alpha "
                 f"{fam.alpha} (both p's unadjusted).")
    return [note]


def undecided_notes(fam: FamilyResult) -> list[str]:
    """One line per row no rule may decide (too few clusters, no variation): why, and how Holm counted it."""
    return [f"{row.test}: {row.verdict}: {row.verdict_reason}; reported with its estimate but not "
            "decided" + (", and counted in Holm as p = 1." if fam.multiplicity == "holm" else ".")
            for row in fam.rows if row.verdict_reason]


def not_accepted(row: DecidedRow) -> list[str]:
    """The instruments (judge, reader) whose controls a row's outcome failed: its tier is then exploratory."""
    return [check.instrument for check in row.instrument_checks if not check.passed]


def exploratory_mark(row: DecidedRow) -> str:
    """Why a row is exploratory whatever its family's tier: its instruments, or a post-outcome amendment."""
    failed = not_accepted(row)
    why = [f"{' and '.join(failed)} not accepted"] if failed else []
    why += [row.demoted] if row.demoted else []
    return f" (exploratory: {'; '.join(why)})" if why else ""


def _rate(v: float | None) -> str:
    return "not computable" if v is None else f"{100 * v:.1f}%"


def _bound(v: float | None) -> str:
    return "not registered" if v is None else f"{100 * v:g}%"


def acceptance_notes(fam: FamilyResult) -> list[str]:
    """One line per instrument of each judged or answer-level test: the judge's controls and spot check, the
    reader's controls, against the plan's thresholds, shown even when a control failed (the row is then
    exploratory)."""
    notes = []
    for row in fam.rows:
        judge = row.acceptance
        if judge:
            kappa = "no spot check on file" if judge.kappa is None else f"kappa {judge.kappa:.2f}"
            notes.append(f"{row.test}: judge {judge.name}, positive control {_rate(judge.positive)} (>= "
                         f"{_bound(judge.positive_min)}), negative control {_rate(judge.negative)} (<= "
                         f"{_bound(judge.negative_max)}), {kappa} (>= 0.6): "
                         + ("accepted" if judge.passed else "not accepted, so the row is exploratory") + ".")
        reader = row.reader_acceptance
        if reader:
            notes.append(f"{row.test}: reader on {reader.name}, positive control (own gold evidence) "
                         f"{_rate(reader.positive)} (>= {_bound(reader.positive_min)}), negative control "
                         f"(another cluster's evidence) {_rate(reader.negative)} "
                         f"(<= {_bound(reader.negative_max)}): "
                         + ("accepted" if reader.passed else "not accepted, so the row is exploratory") + ".")
    return notes


def to_markdown(fam: FamilyResult) -> str:
    lines = [f"## {fam.family}", "", caption(fam), ""]
    if not fam.ran:
        lines += ["**Not run.** Missing:", ""] + [f"- {m}" for m in fam.missing]
        return "\n".join(lines) + "\n"
    lines += ["| " + " | ".join(_HEADER) + " |", "|" + "---|" * len(_HEADER)]
    lines += ["| " + " | ".join(_cells(row)) + " |" for row in fam.rows]
    if any(r.small_difference_within_margin for r in fam.rows):
        lines += [
            "",
            f"{SMALL_MARK} equivalent within the margin, but the 95% CI excludes 0: a small difference.",
        ]
    notes = t_tost_notes(fam) + undecided_notes(fam) + acceptance_notes(fam)
    if notes:
        lines += [""] + notes
    if fam.missing:
        lines += ["", "Tests without per-question results (counted in Holm as p = 1): "
                  + "; ".join(fam.missing) + "."]
    return "\n".join(lines) + "\n"


def to_csv(fam: FamilyResult) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in fam.rows:
        flat = flat_record(row.to_json())
        writer.writerow(
            [
                "" if flat.get(c) is None else repr(flat[c]) if isinstance(flat[c], float) else flat[c]
                for c in CSV_COLUMNS
            ]
        )
    return out.getvalue()


def flat_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """A row's or contrast's JSON with each interval, in its place, as <key>_lo and <key>_hi (None when it has
    none): what the CSV columns and the Python API's frames hold."""
    flat: dict[str, Any] = {}
    for key, value in record.items():
        if key in INTERVALS:
            flat[f"{key}_lo"], flat[f"{key}_hi"] = (None, None) if value is None else value
        else:
            flat[key] = value
    return flat


def to_latex(fam: FamilyResult) -> str:
    lines = ["\\begin{table}[t]", "\\centering", "\\small",
             f"\\caption{{{_tex(caption(fam))}}}", f"\\label{{tab:stats-{_tex(fam.family)}}}"]
    if not fam.ran:
        lines += [f"Not run; missing: {_tex('; '.join(fam.missing))}.", "\\end{table}"]
        return "\n".join(lines) + "\n"
    lines += ["\\begin{tabular}{" + "l" * 5 + "r" * 11 + "l}", "\\toprule",
              " & ".join(_tex(h) for h in _HEADER) + " \\\\", "\\midrule"]
    for row in fam.rows:
        lines.append(" & ".join(_tex(c) for c in _cells(row)) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}"]
    return "\n".join(lines) + "\n"


def summary_markdown(families: list[FamilyResult]) -> str:
    lines = ["# Statistics: every registered family", "",
             "| family | tier | source | tests | rule | multiplicity | status | verdicts / missing |",
             "|---|---|---|---|---|---|---|---|"]
    for fam in families:
        if fam.ran:
            counts: dict[str, int] = {}
            for row in fam.rows:
                counts[row.verdict] = counts.get(row.verdict, 0) + 1
            detail = ", ".join(f"{v} {n}" for v, n in sorted(counts.items()))
        else:
            detail = "missing: " + "; ".join(fam.missing)
        lines.append(f"| [{fam.family}]({fam.family}.md) | {fam.tier} | {fam.source} | "
                     f"{fam.n_tests} | {fam.rule} | {fam.multiplicity} | {fam.status.value} | {detail} |")
    return "\n".join(lines) + "\n"


class Contrasted(Protocol):
    """What names a contrast: a decided row, or a registered test not yet decided."""

    @property
    def a(self) -> str: ...
    @property
    def b(self) -> str: ...
    @property
    def retriever(self) -> str: ...
    @property
    def retriever_b(self) -> str | None: ...


def contrast_label(row: Contrasted) -> str:
    """"A - B", or "A (r1) - B (r2)" for a cross-retriever contrast."""
    if row.retriever_b:
        return f"{row.a} ({row.retriever}) - {row.b} ({row.retriever_b})"
    return f"{row.a} - {row.b}"


def retriever_label(row: Contrasted) -> str:
    return f"{row.retriever} vs {row.retriever_b}" if row.retriever_b else row.retriever


def _mdd(row: DecidedRow) -> str:
    # statistics written before the MDD existed have no such field: shown as unknown, not as 0
    return "-" if row.mdd is None else _num(row.mdd)


def _verdict(row: DecidedRow) -> str:
    verdict = row.verdict + (SMALL_MARK if row.small_difference_within_margin else "")
    # a row whose judge or reader was not accepted carries no confirmatory verdict
    return verdict + exploratory_mark(row)


def _num(x: float) -> str:
    return f"{x:.2f}"


def _ci(ci: tuple[float, float]) -> str:
    return f"[{_num(ci[0])}, {_num(ci[1])}]"


def _p(p: float | None) -> str:
    if p is None:
        return "-"
    return "<0.001" if p < 0.001 else f"{p:.3f}"



_TEX_ESCAPES = {"&": "\\&", "%": "\\%", "$": "\\$", "#": "\\#", "_": "\\_", "{": "\\{", "}": "\\}",
                "~": "\\textasciitilde{}", "^": "\\textasciicircum{}", "\\": "\\textbackslash{}", "<": "$<$",
                "±": "$\\pm$", "†": "$^\\dagger$", "‡": "$^\\ddagger$"}


def _tex(text: str) -> str:
    return "".join(_TEX_ESCAPES.get(ch, ch) for ch in str(text))
