"""The self-contained HTML page: styles inline, figures as base64 data URIs, no script, font or link out.

Figures go in <img> elements rather than inline <svg> so that the SVG ids matplotlib writes (glyphs, clip
paths) cannot collide between figures on one page.
"""

from __future__ import annotations

import base64
import html
import re
from typing import Callable

from harness.report.model import Definition, Section
from harness.report.tables import to_html

_STYLE = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;max-width:1180px;margin:2em auto;
padding:0 1em;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
nav ol{columns:3;font-size:.95em}code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.9em}
pre{background:#f6f6f6;padding:.6em;overflow-x:auto}
table{border-collapse:collapse;font-size:.85em;margin:.4em 0}
th,td{padding:.2em .6em;text-align:left;font-variant-numeric:tabular-nums;border-bottom:1px solid #e4e4e4}
th{border-bottom:2px solid #888}
figure{margin:1.2em 0;overflow-x:auto}figcaption{font-size:.9em;color:#444;margin-bottom:.3em}
img{max-width:100%;height:auto;display:block}.file{color:#888}.note{font-size:.85em;color:#444}
.missing{background:#fff4e5;border-left:4px solid #e69500;padding:.4em .8em;margin:.5em 0}
details>summary{cursor:pointer;color:#2255aa;font-size:.9em}
body>h1{margin:.4em 0 .2em}body>p:first-of-type{margin:0;font-size:.85em;color:#444}
#summary{display:grid;grid-template-columns:auto minmax(0,1fr);gap:0 1.2em;align-items:start}
#summary>h2{grid-column:1/-1;margin:.5em 0 .2em}#summary>p{grid-column:1/-1;margin:.2em 0;font-size:.9em}
#summary figure{margin:.2em 0}#summary table{font-size:.8em;line-height:1.25}
#summary td,#summary th{padding:.05em .4em;white-space:nowrap}
#summary figure.table{width:min-content}#summary figcaption{font-size:.8em}
#summary>ul{grid-column:1/-1;margin:.2em 0 .4em;padding-left:1.2em;font-size:.9em}
#summary li{margin:.15em 0}a.term{color:inherit;text-decoration:underline dotted #888}
dl.glossary{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em;font-size:.9em}
dl.glossary dt{font-weight:600;font-family:ui-monospace,Menlo,Consolas,monospace}dl.glossary dd{margin:0}
dt:target{background:#fff4b0}
"""
LEAD_SECTION = "summary"


def svg_data_uri(svg: str) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def render_page(title: str, subtitle: str, sections: list[Section]) -> str:
    esc = html.escape
    linked = term_linker([d for s in sections for d in s.definitions])
    toc = "".join(f'<li><a href="#{s.id}">{esc(s.title)}</a></li>' for s in sections)
    # the summary opens the page, before the table of contents, so the first screen answers the question
    lead = sections[:1] if sections and sections[0].id == LEAD_SECTION else []
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{esc(title)}</title><style>{_STYLE}</style></head><body>",
             f"<h1>{esc(title)}</h1><p>{esc(subtitle)}</p>"]
    for s in lead:  # the first screen: every code in it links to its glossary entry
        parts += _section(s, linked)
    parts.append(f"<nav><ol>{toc}</ol></nav>")
    for s in sections[len(lead):]:
        parts += _section(s)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _section(s: Section, linked: Callable[[str], str] | None = None) -> list[str]:
    """`linked` renders the section's prose, captions and cells with their codes linked (the first screen);
    without it prose shows `x` as code and captions and cells are escaped as written."""
    esc = html.escape
    text, plain = (linked, linked) if linked else (_inline_code, esc)
    parts = [f'<section id="{s.id}"><h2>{esc(s.title)}</h2>']
    parts += [f'<p class="missing">{esc(m.sentence())}</p>' for m in s.missing]
    parts += [f"<p>{text(p)}</p>" for p in s.paragraphs]
    if s.bullets:
        parts.append('<ul class="findings">' + "".join(f"<li>{text(b)}</li>" for b in s.bullets) + "</ul>")
    parts += [f"<pre>{esc(p)}</pre>" for p in s.preformatted]
    parts += [to_html(t, plain) for t in s.tables]
    parts += _definitions(s.definitions)
    for f in s.figures:
        parts.append(f'<figure class="figure" id="figure-{esc(f.name)}"><figcaption>{plain(f.caption)} '
                     f'<span class="file">(figures/{esc(f.name)}.svg)</span></figcaption>'
                     f'<img alt="{esc(f.name)}" src="{svg_data_uri(f.svg)}"></figure>')
    parts.append("</section>")
    return parts


def _inline_code(text: str) -> str:
    """`x` as <code>x</code>; everything else escaped."""
    pieces = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(pieces))


def _definitions(definitions: list[Definition]) -> list[str]:
    """The glossary: one <dl> per group; each term's id is what the first screen links to."""
    esc = html.escape
    parts, group = [], None
    for d in definitions:
        if d.group != group:
            parts += (["</dl>"] if group is not None else []) + [
                f"<h3>{esc(d.group)}</h3>",
                '<dl class="glossary">',
            ]
            group = d.group
        kind = ' class="code"' if d.code else ""
        parts.append(f'<dt id="{esc(d.anchor)}"{kind}>{esc(d.term)}</dt><dd>{_inline_code(d.text)}</dd>')
    return parts + (["</dl>"] if group is not None else [])


def term_linker(definitions: list[Definition]) -> Callable[[str], str]:
    """A renderer of text that links every code the glossary defines (in backticks or standing alone,
    never inside a longer name: `S` is not found in `S+T` or `H3-S`) and the first use of each glossary word
    (a plural too) in the text, escaping the rest. The first definition of a term wins."""
    esc = html.escape
    terms: dict[str, Definition] = {}
    for d in definitions:
        terms.setdefault(d.term, d)
    if not terms:
        return _inline_code

    def alternation(code: bool) -> str:
        names = sorted((t for t, d in terms.items() if d.code == code), key=lambda t: (-len(t), t))
        return "|".join(map(re.escape, names)) or r"(?!x)x"

    pattern = re.compile(
        rf"(?<![\w@+.-])(?:(?P<code>{alternation(True)})|(?P<word>(?:{alternation(False)})s?))"
        r"(?![\w@+-])"
    )

    def link(d: Definition, shown: str) -> str:
        return f'<a class="term" href="#{esc(d.anchor)}">{shown}</a>'

    def render(text: str) -> str:
        out, words_seen = [], set()
        for i, piece in enumerate(text.split("`")):
            if i % 2:  # a code in backticks
                d = terms.get(piece)
                out.append(link(d, f"<code>{esc(piece)}</code>") if d else f"<code>{esc(piece)}</code>")
                continue
            at = 0
            for m in pattern.finditer(piece):
                out.append(esc(piece[at:m.start()]))
                found = m.group(0)
                key = found if found in terms else found[:-1]  # a glossary word in the plural
                if m.group("word") is not None and key in words_seen:
                    out.append(esc(found))
                else:
                    words_seen.add(key)
                    out.append(link(terms[key], esc(found)))
                at = m.end()
            out.append(esc(piece[at:]))
        return "".join(out)

    return render
