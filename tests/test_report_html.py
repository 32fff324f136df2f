"""The study report (issue 15, part 1): results/report/index.html and its tables and figures.

One LLM-free copy of the demo under BM25 is built once: the report is taken before scoring (outcomes
withheld) and after score + stats (every section filled). Families that need the paid arms are not run
there, so the page must name them as missing with the make target, never leave them out.
"""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.report.build import SECTION_BUILDERS
from harness.data.model import Chunk, Evidence, Question
from harness.report.chunksets import chunk_set_stats
from harness.plan.load import load_study_plan
from harness.study import Study

from browser_support import browser_or_skip, first_screen, wait_for_every_element
from pipeline_support import make_llm_free_study  # noqa: E402
from harness.grid.paths import results_dir

pytestmark = pytest.mark.slow  # builds, scores and reports a study copy (and opens a browser)

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo"
LLM_FREE = ["S", "S+T", "F512c", "F256t", "P", "FL"]


def _llm_free_bm25_study(root: Path) -> Study:
    return make_llm_free_study(root)  # LLM-free arms under BM25, the plan trimmed to them


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    study = _llm_free_bm25_study(tmp_path_factory.mktemp("report-study"))
    root = str(study.root)
    assert main(["build-arms", "--study", root, "--no-progress"]) == 0
    assert main(["report", "--study", root]) == 0
    before = (results_dir(study) / "report" / "index.html").read_text(encoding="utf-8")
    assert main(["score", "--study", root, "--no-progress"]) == 0
    assert main(["stats", "--study", root]) == 0
    assert main(["report", "--study", root]) == 0
    return study, before


# --- self-containment ---

_XMLNS = re.compile(r"""\sxmlns(:\w+)?=("[^"]*"|'[^']*')""")
_FETCHING = [
    (re.compile(r"https?://", re.I), "an http(s) URL"),
    (re.compile(r"""(src|href)\s*=\s*["']?\s*//""", re.I), "a protocol-relative src/href"),
    (re.compile(r"@import", re.I), "an @import"),
    (re.compile(r"""url\(\s*["']?(?!data:|#)""", re.I), "a url() outside data: and #fragment"),
    (re.compile(r"""(src|href)\s*=\s*["']?(?!data:|#)[a-z]""", re.I), "a src/href that is not data: or #"),
    (re.compile(r"<script|<link\b|@font-face", re.I), "a script, link or web font"),
]
_DATA_URI = re.compile(r"""src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)\"""")


def external_references(page: str) -> list[str]:
    """What in the page (or in an SVG inlined as a data URI) could make a browser fetch anything.
    xmlns attributes are namespace names, never fetched, and are ignored."""
    found = []
    documents = [("page", page)] + [(f"figure {i}", base64.b64decode(m).decode("utf-8"))
                                    for i, m in enumerate(_DATA_URI.findall(page))]
    for where, text in documents:
        text = _XMLNS.sub("", text)
        found += [f"{where}: {what}" for pattern, what in _FETCHING if pattern.search(text)]
    return found


def test_the_url_check_can_fail():
    svg = base64.b64encode(b'<svg xmlns="http://www.w3.org/2000/svg"><image href="https://x/y.png"/></svg>')
    assert external_references('<img src="data:image/svg+xml;base64,' + svg.decode() + '">') == [
        "figure 0: an http(s) URL", "figure 0: a src/href that is not data: or #"]
    assert external_references('<p style="background:url(img.png)">') == [
        "page: a url() outside data: and #fragment"
    ]
    assert external_references('<img src="//cdn.example/x.svg">') == ["page: a protocol-relative src/href"]
    assert external_references('<a href="#verdicts">') == []


def test_page_has_no_external_reference(reports):
    study, before = reports
    page = (results_dir(study) / "report" / "index.html").read_text(encoding="utf-8")
    assert external_references(page) == []
    assert external_references(before) == []
    assert len(_DATA_URI.findall(page)) >= 2


# --- structure ---

def _section(page: str, section_id: str) -> str:
    start = page.index(f'<section id="{section_id}">')
    return page[start:page.index("</section>", start)]


def test_every_family_arm_and_figure_is_on_the_page(reports):
    study, _ = reports
    out = results_dir(study) / "report"
    page = (out / "index.html").read_text(encoding="utf-8")
    for section_id in ("identity", "data", "chunk-sets", "costs", "means", "verdicts", "forest", "sweeps",
                       "spending"):
        assert f'<section id="{section_id}">' in page, section_id
    plan = load_study_plan(study)
    ran, not_run = [], []
    for fam in plan.families:
        needs_paid_arm = any(a not in LLM_FREE for t in fam.tests for a in (t.a, t.b))
        (not_run if needs_paid_arm else ran).append(fam.id)
    # the copy's plan keeps the families whose tests need no paid arm (freeze refuses undefined arms)
    # robustness keeps its LLM-free pooled-corpus test (S+T vs S on papers-pooled)
    assert ran == ["H3", "exploratory", "robustness"] and not_run == []
    for fam in ran:
        assert f'id="table-verdicts-{fam}"' in _section(page, "verdicts")
        assert f'id="figure-forest-{fam}"' in _section(page, "forest")
        assert (out / "figures" / f"forest-{fam}.svg").is_file()
        for test in plan.family(fam).tests:
            assert f"<td>{test.id}</td>" in _section(page, "verdicts")
            assert f"{test.id})</td>" in _section(page, "spending")
    for fam in not_run:
        assert f"family {fam} not run" in _section(page, "verdicts")
        assert "make build-arms score stats" in _section(page, "verdicts")
    for dataset in ("papers", "docs"):
        for section_id in ("chunk-sets", "means"):
            head = re.search(
                r"<thead>(.*?)</thead>", _section(page, section_id).split(f"`{dataset}`")[1]
            ).group(1)
            assert all(f"<th>{arm}</th>" in head or section_id == "chunk-sets" for arm in LLM_FREE)
        for arm in LLM_FREE:
            assert f"<td>{dataset}</td><td>{arm}</td>" in _section(page, "costs")
            assert (f"<td>{arm}</td>" in _section(page, "chunk-sets"))
        assert f'id="figure-sweep-{dataset}-bm25"' in page
    figures = sorted(p.stem for p in (out / "figures").glob("*.svg"))
    assert figures == sorted(re.findall(r'<figure class="figure" id="figure-([^"]+)"', page))
    tables = sorted(re.findall(r'<figure class="table" id="table-([^"]+)"', page))
    assert tables == sorted(p.stem for p in (out / "tables").glob("*.csv"))
    assert tables == sorted(p.stem for p in (out / "tables").glob("*.tex"))
    md = (out / "report.md").read_text(encoding="utf-8")
    assert all(f"figures/{f}.svg" in md for f in figures)


def test_exclusions_and_identity_come_from_the_inputs(reports):
    study, _ = reports
    page = (results_dir(study) / "report" / "index.html").read_text(encoding="utf-8")
    data = _section(page, "data")
    assert "<td>papers</td><td>questions in input</td><td>48</td>" in data
    assert "<td>docs</td><td>questions kept</td><td>47</td>" in data
    assert "<td>docs</td><td>question dropped</td><td>0</td><td>no located evidence</td>" in data
    identity = _section(page, "identity")
    from harness.provenance.freeze import frozen_hash
    assert frozen_hash(study) in identity
    assert "plan/plan.yaml" in identity and "pre-outcome" in identity


def test_outcomes_are_withheld_until_every_cell_is_scored(reports):
    _, before = reports
    for section_id in ("means", "verdicts", "forest", "sweeps", "spending"):
        sec = _section(before, section_id)
        assert "withheld, no interim looks" in sec and "make build-arms score" in sec
        assert "<table" not in sec and "<img" not in sec
    assert "<table" in _section(before, "chunk-sets")  # inputs are not outcomes


# --- the first screen (issue 30, part 4) ---

SUMMARY_TIERS = ("confirmatory", "secondary")


def _unlinked(html: str) -> str:
    """The page with its glossary links taken out (the summary links every code)."""
    return re.sub(r'<a class="term" href="#[^"]+">|</a>', "", html)


def test_the_summary_opens_the_page_with_every_registered_test(reports):
    study, before = reports
    page = (results_dir(study) / "report" / "index.html").read_text(encoding="utf-8")
    assert page.index('<section id="summary">') < page.index("<nav>") < page.index('<section id="identity">')
    summary = _unlinked(_section(page, "summary"))
    tiers = {fam.tier for fam in load_study_plan(study).families}
    assert {
        "confirmatory",
        "secondary",
    } <= tiers and "exploratory" in tiers  # the check below can tell them apart
    for fam in load_study_plan(study).families:
        for test in fam.tests:
            assert (f"<td>{test.id}</td>" in summary) == (fam.tier in SUMMARY_TIERS), test.id
            if fam.tier in SUMMARY_TIERS:  # every listed test ran here: a verdict, no placeholder
                row = summary[summary.index(f"<td>{test.id}</td>"):]
                assert (
                    "not run" not in row[: row.index("</tr>")] and "withheld" not in row[: row.index("</tr>")]
                )
    assert 'id="figure-forest-summary"' in summary
    assert "`papers` 48 questions in 8 clusters, 0 dropped" in summary.replace("<code>", "`").replace(
        "</code>", "`"
    )
    assert "no instrument check registered" in summary  # the LLM-free copy has no judge
    md = (results_dir(study) / "report" / "report.md").read_text(encoding="utf-8")
    assert md.index("## Summary") < md.index("## Study identity")
    # before scoring: the registered tests are named, no number is shown
    early = _unlinked(_section(before, "summary"))
    assert "withheld, no interim looks" in early and "<img" not in early
    assert all(f"<td>{t.id}</td>" in early for fam in load_study_plan(study).families
               if fam.tier in SUMMARY_TIERS for t in fam.tests)


def test_long_tables_are_collapsed(reports):
    from harness.report.model import LONG_TABLE_ROWS

    study, _ = reports
    page = (results_dir(study) / "report" / "index.html").read_text(encoding="utf-8")
    tables = dict(re.findall(r'<figure class="table" id="table-([^"]+)">(.*?)</figure>', page, re.S))
    for name in ("means-papers", "means-docs", "data-exclusions"):
        assert "<details><summary>" in tables[name], name
    assert "<details>" not in tables["summary-tests"]
    long = [n for n, body in tables.items() if body.count("<tr>") - 1 > LONG_TABLE_ROWS]
    assert long and all("<details>" in tables[n] for n in long)
    assert "<script" not in page


# --- headless Chromium ---

def test_page_renders_in_headless_chromium(reports):
    study, _ = reports
    page = (results_dir(study) / "report" / "index.html").read_text(encoding="utf-8")
    driver = browser_or_skip()
    try:
        driver.get((results_dir(study) / "report" / "index.html").as_uri())
        wait_for_every_element(driver, "img", page.count("<img "))
        images = driver.execute_script(
            "return Array.from(document.querySelectorAll('img, svg')).map(e => {"
            " const r = e.getBoundingClientRect();"
            " return [e.alt || e.tagName, e.complete === undefined ? true : e.complete,"
            "         e.naturalWidth === undefined ? r.width : e.naturalWidth, r.width, r.height]; })")
        logs = [entry for entry in driver.get_log("browser") if entry["level"] in ("SEVERE", "WARNING")]
        sections = driver.execute_script("return document.querySelectorAll('section').length")
    finally:
        driver.quit()
    assert logs == []
    # the lab, repeat-generation and add-on arms sections are left out: this study has no train/held-out
    # split,
    # no repeats and no add-on arm
    assert sections == page.count('<section id="') == len(SECTION_BUILDERS) - 3
    figures = sorted(p.stem for p in (results_dir(study) / "report" / "figures").glob("*.svg"))
    assert sorted(i[0] for i in images) == figures
    for name, complete, natural, width, height in images:
        assert complete and natural > 0 and width > 0 and height > 0, name


def test_the_summary_is_visible_without_scrolling(reports):
    """At 1280x800 every registered test's sentence lies wholly inside the first screen
    (tests/test_report_browser.py reads the first screen of a study `harness init` made)."""
    study, _ = reports
    driver = browser_or_skip()
    try:
        first_screen(driver, results_dir(study) / "report" / "index.html")
        viewport = driver.execute_script("return [window.innerWidth, window.innerHeight, window.scrollY]")
        boxes = driver.execute_script(
            "return Array.from(document.querySelectorAll('#summary ul.findings li')).map(e => {"
            " const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })")
    finally:
        driver.quit()
    assert viewport == [1280, 800, 0]
    assert len(boxes) == sum(len(f.tests) for f in load_study_plan(study).families if f.tier in SUMMARY_TIERS)
    for left, top, right, bottom in boxes:
        assert 0 <= left < right <= 1280 and 0 <= top < bottom <= 800, boxes


def test_a_broken_figure_is_caught_by_the_browser_check(tmp_path):
    driver = browser_or_skip()
    page = tmp_path / "broken.html"
    page.write_text(
        '<!DOCTYPE html><html><body><img alt="x" src="data:image/svg+xml;base64,bm90IGFuIHN2Zw==">'
        "</body></html>",
        encoding="utf-8",
    )
    try:
        driver.get(page.as_uri())
        natural = driver.execute_script("return document.images[0].naturalWidth")
    finally:
        driver.quit()
    assert natural == 0


# --- LaTeX ---

def test_latex_tables_compile(reports, tmp_path):
    pdflatex = shutil.which("pdflatex")
    if pdflatex is None:
        pytest.skip(
            "pdflatex is not installed (apt-get install -y --no-install-recommends texlive-latex-recommended)"
        )
    study, _ = reports
    tables = sorted((results_dir(study) / "report" / "tables").glob("*.tex"))
    assert tables
    body = "\n".join(f"\\input{{{t.as_posix()}}}\n\\clearpage" for t in tables)
    (tmp_path / "doc.tex").write_text(
        "\\documentclass{article}\n\\usepackage[landscape,margin=1cm]{geometry}\n\\usepackage{booktabs}\n"
        "\\begin{document}\n" + body + "\n\\end{document}\n", encoding="utf-8")
    proc = subprocess.run([pdflatex, "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]


# --- chunk-set diagnostics, on inline records ---

def _chunk(doc: str, i: int, *spans) -> Chunk:
    return Chunk(doc, f"{doc}#{i}", "word " * (10 * i + 1), tuple(spans), "", 1, 1, ("paragraph",))


def test_gold_evidence_spanning_chunks_is_counted():
    chunks = [_chunk("d", 1, (0, 50)), _chunk("d", 2, (50, 80), (80, 120)), _chunk("e", 3, (0, 10), (20, 30))]
    evidence = (Evidence("d", "x", 10, 40), Evidence("d", "x", 40, 60), Evidence("d", "x", 60, 110),
                Evidence("e", "x", 5, 25), Evidence("d", "x"))  # the last one is unlocated: not counted
    q = Question("q1", "t", "query", "c", "", ("d", "e"), evidence)
    s = chunk_set_stats(chunks, (q,), budgets=[15, 25])
    assert (s.evidence_located, s.evidence_spanning) == (4, 2)
    assert s.share_spanning == 0.5
    assert s.share_over == {15: 2 / 3, 25: 1 / 3}


def test_share_over_budget_is_measured_in_the_budget_unit():
    """Five long words are many cl100k tokens; ten one-letter words are ten of either: only the unit
    decides."""
    long = Chunk("d", "d#0", "antidisestablishmentarianism " * 5, ((0, 150),), "", 1, 1, ("paragraph",))
    short = Chunk("d", "d#1", "a b c d e f g h i j", ((150, 169),), "", 1, 1, ("paragraph",))
    by_words = chunk_set_stats([long, short], (), budgets=[8, 12], unit="words")
    by_tokens = chunk_set_stats([long, short], (), budgets=[8, 12])
    assert (by_words.unit, by_tokens.unit) == ("words", "tokens")
    assert by_words.share_over == {8: 0.5, 12: 0.0}  # only the ten-word chunk is over 8 words
    assert by_tokens.share_over == {8: 1.0, 12: 0.5}  # the long words are over 12 tokens, the letters are not
    assert by_words.mean_tokens == by_tokens.mean_tokens  # the token columns stay in tokens


def test_chunk_sets_sharing_texts_share_one_token_count(monkeypatch):
    import harness.tokens as tokens

    encoded = []
    real = tokens.cl100k()

    class Counting:
        def encode_ordinary(self, text):
            encoded.append(text)
            return real.encode_ordinary(text)

    monkeypatch.setattr(tokens, "_PART_COUNTS", {})
    monkeypatch.setattr(tokens, "cl100k", lambda: Counting())
    a = Chunk("d", "d#0", "one two three", ((0, 13),), "", 1, 1, ("paragraph",))
    b = Chunk("d", "d#1", "four five", ((13, 22),), "", 1, 1, ("paragraph",))
    first = chunk_set_stats([a, b], (), budgets=[2])
    second = chunk_set_stats(
        [a, Chunk("d", "e#0", "one two three", ((0, 13),), "x", 1, 1, ("paragraph",))], (), budgets=[2]
    )
    assert encoded == ["one two three", "four five"]  # the second set's texts were counted by the first
    assert (first.mean_tokens, second.mean_tokens) == ((3 + 2) / 2, 3.0)


def test_sections_without_inputs_name_the_make_target(tmp_path):
    study = _llm_free_bm25_study(tmp_path / "unbuilt")
    assert main(["report", "--study", str(study.root)]) == 0
    page = (results_dir(study) / "report" / "index.html").read_text(encoding="utf-8")
    for section_id in ("chunk-sets", "costs"):
        sec = _section(page, section_id)
        assert "make build-arms" in sec and "<table" not in sec, section_id
    assert "<table" in _section(page, "data")  # the questions load without any build
    assert not (results_dir(study) / "report" / "tables" / "costs.csv").exists()


def test_exploratory_section_mdd_column_and_blocked_estimate(reports):
    study, before = reports
    out = results_dir(study) / "report"
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "## Exploratory analyses" in md and "Exploratory analyses" in before  # withheld before scoring
    # the LLM-free copy keeps the plan's win/tie/loss and between-strata entries
    wtl = (out / "tables" / "exploratory-win-tie-loss.csv").read_text(encoding="utf-8").splitlines()
    assert wtl[0].startswith("family,test,contrast") and len(wtl) > 1
    assert (out / "figures" / "exploratory-domains-docs.svg").is_file()
    verdicts = next(out.joinpath("tables").glob("verdicts-*.csv")).read_text(encoding="utf-8").splitlines()
    assert "MDD" in verdicts[0].split(",")
    assert "Missing: the pre-build cost estimate (results/estimate.json); run `make estimate`." in md


def test_a_missing_test_in_a_family_that_ran_is_a_row_of_dashes():
    """A family runs when some of its tests have results; the others are `missing` rows with no statistics,
    which the verdict table shows as such (it read every row's question count before)."""
    from harness.report.sections_outcomes import _verdict_rows
    from harness.stats.decided import DecidedRow
    from harness.stats.families import FamilyResult

    missing = {
        "test": "T-missing",
        "rule": "tost",
        "dataset": "papers",
        "a": "E",
        "b": "S",
        "retriever": "bm25",
        "metric": "rec@512t",
        "margin": 5.0,
        "tier": "confirmatory",
        "source": "plan",
        "verdict": "missing",
        "missing": ["papers/E/bm25"],
        "subset": None,
    }
    fam = FamilyResult(family="f", description="", tier="confirmatory", multiplicity="holm", rule="tost",
                       signflip_required=False, alpha=0.05, seed=1, resamples=10, max_flips=10, source="plan",
                       n_tests=1, study="s", harness_version="0", status="ran", missing=("papers/E/bm25",),
                       rows=(DecidedRow.from_json(missing, "row"),))
    row, = _verdict_rows(fam)
    assert row[:5] == ["T-missing", "E - S", "papers", "bm25", "rec@512t"]
    assert row[-5:] == ["–", "±5", "–", "confirmatory", "missing"] and len(row) == 17
