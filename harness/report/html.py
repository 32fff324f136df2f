"""The self-contained HTML page: styles inline, figures as base64 data URIs, no script, font or link out.

Figures go in <img> elements rather than inline <svg> so that the SVG ids matplotlib writes (glyphs, clip
paths) cannot collide between figures on one page.
"""

from __future__ import annotations

import base64
import html

from harness.report.model import Section
from harness.report.tables import to_html

_STYLE = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;max-width:1180px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
nav ol{columns:3;font-size:.95em}code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.9em}
pre{background:#f6f6f6;padding:.6em;overflow-x:auto}
table{border-collapse:collapse;font-size:.85em;margin:.4em 0}th,td{padding:.2em .6em;text-align:left;font-variant-numeric:tabular-nums;border-bottom:1px solid #e4e4e4}
th{border-bottom:2px solid #888}
figure{margin:1.2em 0;overflow-x:auto}figcaption{font-size:.9em;color:#444;margin-bottom:.3em}
img{max-width:100%;height:auto;display:block}.file{color:#888}.note{font-size:.85em;color:#444}
.missing{background:#fff4e5;border-left:4px solid #e69500;padding:.4em .8em;margin:.5em 0}
details>summary{cursor:pointer;color:#2255aa;font-size:.9em}
body>h1{margin:.4em 0 .2em}body>p:first-of-type{margin:0;font-size:.85em;color:#444}
#summary{display:grid;grid-template-columns:auto minmax(0,1fr);gap:0 1.2em;align-items:start}
#summary>h2{grid-column:1/-1;margin:.5em 0 .2em}#summary>p{grid-column:1/-1;margin:.2em 0;font-size:.9em}
#summary figure{margin:.2em 0}#summary table{font-size:.72em;line-height:1.25}
#summary td,#summary th{padding:.05em .4em;white-space:nowrap}
#summary figure.table{width:min-content}#summary figcaption{font-size:.8em}
#summary img{max-height:calc(100vh - 16em);width:auto}
"""
LEAD_SECTION = "summary"


def svg_data_uri(svg: str) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def render_page(title: str, subtitle: str, sections: list[Section]) -> str:
    esc = html.escape
    toc = "".join(f'<li><a href="#{s.id}">{esc(s.title)}</a></li>' for s in sections)
    # the summary opens the page, before the table of contents, so the first screen answers the question
    lead = sections[:1] if sections and sections[0].id == LEAD_SECTION else []
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{esc(title)}</title><style>{_STYLE}</style></head><body>",
             f"<h1>{esc(title)}</h1><p>{esc(subtitle)}</p>"]
    for s in lead:
        parts += _section(s)
    parts.append(f"<nav><ol>{toc}</ol></nav>")
    for s in sections[len(lead):]:
        parts += _section(s)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _section(s: Section) -> list[str]:
    esc = html.escape
    parts = [f'<section id="{s.id}"><h2>{esc(s.title)}</h2>']
    parts += [f'<p class="missing">{esc(m.sentence())}</p>' for m in s.missing]
    parts += [f"<p>{_inline_code(p)}</p>" for p in s.paragraphs]
    parts += [f"<pre>{esc(p)}</pre>" for p in s.preformatted]
    parts += [to_html(t) for t in s.tables]
    for f in s.figures:
        parts.append(f'<figure class="figure" id="figure-{esc(f.name)}"><figcaption>{esc(f.caption)} '
                     f'<span class="file">(figures/{esc(f.name)}.svg)</span></figcaption>'
                     f'<img alt="{esc(f.name)}" src="{svg_data_uri(f.svg)}"></figure>')
    parts.append("</section>")
    return parts


def _inline_code(text: str) -> str:
    """`x` as <code>x</code>; everything else escaped."""
    pieces = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(pieces))
