"""One report Table as CSV, LaTeX (booktabs), Markdown and HTML."""

from __future__ import annotations

import csv
import html
import io
from typing import Callable

from harness.report.model import Table

_TEX_ESCAPES = {"&": "\\&", "%": "\\%", "$": "\\$", "#": "\\#", "_": "\\_", "{": "\\{", "}": "\\}",
                "~": "\\textasciitilde{}", "^": "\\textasciicircum{}", "\\": "\\textbackslash{}",
                "<": "\\textless{}", ">": "\\textgreater{}", "±": "$\\pm$", "†": "$^\\dagger$",
                "‡": "$^\\ddagger$", "–": "--", "−": "$-$", "≥": "$\\geq$", "≤": "$\\leq$", "×": "$\\times$"}


def tex(text: str) -> str:
    # anything outside ASCII that pdflatex cannot set without packages becomes '?': tables must compile
    return "".join(_TEX_ESCAPES.get(ch, ch if ord(ch) < 128 else "?") for ch in str(text))


def to_csv(t: Table) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(t.header)
    writer.writerows(t.rows)
    return out.getvalue()


def to_latex(t: Table) -> str:
    """A booktabs table float; needs only \\usepackage{booktabs}."""
    spec = "l" + "r" * (len(t.header) - 1)
    lines = ["\\begin{table}[t]", "\\centering", "\\small", f"\\caption{{{tex(t.caption)}}}",
             f"\\label{{tab:{tex(t.name)}}}", f"\\begin{{tabular}}{{{spec}}}", "\\toprule",
             " & ".join(tex(h) for h in t.header) + " \\\\", "\\midrule"]
    lines += [" & ".join(tex(c) for c in row) + " \\\\" for row in t.rows]
    lines += ["\\bottomrule", "\\end{tabular}"]
    lines += [f"\\par\\footnotesize {tex(n)}" for n in t.notes]
    lines += ["\\end{table}"]
    return "\n".join(lines) + "\n"


def to_markdown(t: Table) -> str:
    cell = lambda v: str(v).replace("|", "\\|")  # noqa: E731
    lines = [
        f"*{t.caption}*",
        "",
        "| " + " | ".join(map(cell, t.header)) + " |",
        "|" + "---|" * len(t.header),
    ]
    lines += ["| " + " | ".join(map(cell, row)) + " |" for row in t.rows]
    lines += [""] + [f"{n}" for n in t.notes] if t.notes else []
    return "\n".join(lines) + "\n"


def to_html(t: Table, text: Callable[[str], str] = html.escape, *, files: bool = True) -> str:
    """The table as the report page shows it; `text` renders each caption, cell and note (escaped; the
    summary's also links its codes); `files` False leaves out the note naming its files under tables/ (a
    table shown in a notebook has none)."""
    esc = html.escape
    head = "".join(f"<th>{text(h)}</th>" for h in t.header)
    body = "\n".join("<tr>" + "".join(f"<td>{text(c)}</td>" for c in row) + "</tr>" for row in t.rows)
    notes = "".join(f'<p class="note">{text(n)}</p>' for n in t.notes)
    grid = f"<table><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table>"
    if t.collapsed:  # closed until clicked; <details> needs no script
        grid = f"<details><summary>show the table ({len(t.rows)} rows)</summary>{grid}</details>"
    where = f' <span class="file">(tables/{esc(t.name)}.csv, .tex)</span>' if files else ""
    return (f'<figure class="table" id="table-{esc(t.name)}"><figcaption>{text(t.caption)}'
            f'{where}</figcaption>{grid}{notes}</figure>')
