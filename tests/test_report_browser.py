"""The report of a study `harness init` made on a new JSONL corpus, read as a person would: at 1280x800 in
headless Chromium its first screen states each registered test's conclusion in a sentence (with the clusters
that would decide it when undecided), every code on that screen links to the glossary, no section is empty
and no figure's text is smaller than 11 px."""

from __future__ import annotations

import base64
import json
import random
import re
from pathlib import Path

import pytest

from browser_support import browser_or_skip, first_screen, wait_for_every_element
from harness.cli.main import main
from harness.plan.load import load_study_plan
from harness.report.sections_summary import SUMMARY_TIERS
from harness.study import Study

pytestmark = pytest.mark.slow  # init and every stage on a small corpus, then a browser

MIN_FIGURE_TEXT_PX = 11
WIDTH, HEIGHT = 1280, 800
WORDS = (
    "amber",
    "basalt",
    "cobalt",
    "delta",
    "ember",
    "fjord",
    "garnet",
    "heron",
    "indigo",
    "juniper",
    "kestrel",
    "lichen",
    "marble",
    "nettle",
    "onyx",
    "pewter",
    "quartz",
    "russet",
    "sable",
    "tansy",
    "umber",
    "violet",
)
FILLER = (
    "the keeper notes that each record is checked twice before the season closes and the ledger is signed "
    "by the warden on duty"
).split()


def corpus(folder: Path) -> tuple[Path, Path]:
    """Six handbooks of four parts, long enough that a 512-token budget misses evidence: the arms differ."""
    rng = random.Random(7)
    (folder / "docs").mkdir(parents=True)
    documents, questions = [], []
    for t in range(6):
        site = f"site{t}"
        lines = [f"# Handbook of {site}", ""]
        for s in range(4):
            lines += [f"## Part {s + 1}", ""]
            for p in range(3):
                fact = (
                    f"The {WORDS[(t * 7 + s * 3 + p) % len(WORDS)]} archive of {site} sits in vault {t}{s}{p}"
                )
                filler = " ".join(rng.choice(FILLER) for _ in range(40))
                lines += [f"{filler}. {fact}. {filler}.", ""]
                if rng.random() < 0.6:
                    questions.append(
                        {
                            "qid": f"q{len(questions):02d}",
                            "query": f"Where is {fact.split(' sits')[0]}?",
                            "scope": {"domain": "docs"},
                            "cluster": "question",
                            "evidence": [{"doc_id": site, "text": fact}],
                        }
                    )
        (folder / "docs" / f"{site}.md").write_text("\n".join(lines), encoding="utf-8")
        documents.append({"doc_id": site, "domain": "docs", "path": f"docs/{site}.md"})
    for name, rows in (("documents", documents), ("questions", questions)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder / "documents.jsonl", folder / "questions.jsonl"


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[Study, Path]:
    root = tmp_path_factory.mktemp("browser")
    documents, questions = corpus(root / "in")
    target = root / "study"
    assert main(["init", str(target), "--documents", str(documents), "--questions", str(questions)]) == 0
    # outside git the registration is NOT VERIFIABLE (exit 3), yet every stage runs
    assert main(["run-all", "--study", str(target), "--rescore", "0", "--no-progress"]) in (0, 3)
    return Study.at(target), target / "results" / "report" / "index.html"


def _registered(study: Study) -> list[str]:
    return [t.id for fam in load_study_plan(study).families if fam.tier in SUMMARY_TIERS for t in fam.tests]


_VISIBLE_TEXT = """
const [width, height] = arguments;
const seen = r => r.bottom > 0 && r.top < height && r.right > 0 && r.left < width;
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
const out = [];
for (let n = walker.nextNode(); n; n = walker.nextNode()) {
  const range = document.createRange(); range.selectNodeContents(n);
  if (!n.textContent.trim() || !seen(range.getBoundingClientRect())) continue;
  out.push([n.textContent, !!n.parentElement.closest('a.term'), !!n.parentElement.closest('code')]);
}
return out;
"""


def test_the_first_screen_states_each_registered_test_in_a_sentence(report):
    study, page = report
    tests = _registered(study)
    driver = browser_or_skip()
    try:
        first_screen(driver, page, WIDTH, HEIGHT)
        viewport = driver.execute_script("return [window.innerWidth, window.innerHeight, window.scrollY]")
        sentences = driver.execute_script(
            "return Array.from(document.querySelectorAll('#summary ul.findings li')).map(e => {"
            " const r = e.getBoundingClientRect(); return [e.innerText, r.left, r.top, r.right, r.bottom]; })"
        )
    finally:
        driver.quit()
    assert viewport == [WIDTH, HEIGHT, 0]
    assert [s[0].split(":")[0] for s in sentences] == tests and len(tests) == 2
    for text, left, top, right, bottom in sentences:
        assert 0 <= left < right <= WIDTH and 0 <= top < bottom <= HEIGHT, text
        assert " points, 95% CI [" in text
        # each is undecided here (n.d., or no variation): the sentence says what more clusters would do
        assert re.search(
            r"more clusters \(\d+ in all\) would likely|[Nn]o (realistic )?number of clusters", text
        ), text


def test_every_code_on_the_first_screen_links_to_the_glossary(report):
    study, page = report
    driver = browser_or_skip()
    try:
        first_screen(driver, page, WIDTH, HEIGHT)
        texts = driver.execute_script(_VISIBLE_TEXT, WIDTH, HEIGHT)
        codes = driver.execute_script(
            "return Array.from(document.querySelectorAll('dt.code')).map(e => e.innerText)"
        )
        targets = driver.execute_script(
            "return Array.from(document.querySelectorAll('#summary a.term')).map(a => {"
            " const t = document.getElementById(a.getAttribute('href').slice(1));"
            " return [a.innerText, t ? t.tagName + ':' + t.innerText : null]; })")
    finally:
        driver.quit()
    config = study.config
    named = set(config.arms) | set(config.datasets) | set(config.retrievers) | set(_registered(study))
    assert named <= set(codes)  # the study's own names are glossary codes
    assert targets and all(t is not None and t.startswith("DT:") for _, t in targets), targets
    assert all(t == f"DT:{text}" for text, t in targets if not text.endswith("s")), targets
    pattern = re.compile(r"(?<![\w@+.-])(" + "|".join(map(re.escape, sorted(codes, key=len, reverse=True)))
                         + r")(?![\w@+-])")
    unlinked = [(text, m.group(0)) for text, linked, _ in texts if not linked for m in pattern.finditer(text)]
    assert unlinked == []
    assert [text for text, linked, in_code in texts if in_code and not linked] == []
    assert (
        sum(linked for _, linked, _ in texts) >= 20
    )  # arms, dataset, retriever, metric, tests, verdicts, tiers


def test_no_section_is_empty_and_no_figure_text_is_under_11_px(report):
    study, page = report
    html = page.read_text(encoding="utf-8")
    driver = browser_or_skip()
    try:
        first_screen(driver, page, WIDTH, HEIGHT)
        wait_for_every_element(driver, "img", html.count("<img "))
        sections = driver.execute_script(
            "return Array.from(document.querySelectorAll('section')).map(s => "
            " [s.id, s.innerText.replace(s.querySelector('h2').innerText, '').trim().length])")
        images = driver.execute_script(
            "return Array.from(document.querySelectorAll('figure.figure img')).map(e => "
            " [e.alt, e.src, e.naturalWidth, e.getBoundingClientRect().width])")
    finally:
        driver.quit()
    assert sections and all(length > 0 for _, length in sections), sections
    assert "addon-arms" not in dict(sections)  # init's study has no add-on arm
    assert {"summary", "glossary"} <= set(dict(sections))
    assert images
    for name, src, natural, shown in images:
        svg = base64.b64decode(src.split(",", 1)[1]).decode("utf-8")
        smallest = smallest_text_px(svg, natural) * shown / natural
        assert smallest >= MIN_FIGURE_TEXT_PX, f"{name}: text {smallest:.1f} px at {WIDTH} px"


def smallest_text_px(svg: str, natural_width: float) -> float:
    """The smallest text of a matplotlib SVG (text drawn as glyph paths, each run scaled by its size in points
    over 100) in CSS pixels at the image's natural width."""
    width_pt = float(re.search(r'<svg[^>]* width="([\d.]+)pt"', svg).group(1))
    sizes = [100 * float(s) for s in re.findall(r"scale\(([\d.]+) -[\d.]+\)", svg)]
    assert sizes, "no text found in the figure"
    return min(sizes) * natural_width / width_pt


def test_the_text_size_check_can_fail():
    small = ('<svg width="100pt" height="50pt"><g transform="translate(1 2) scale(0.08 -0.08)"></g>'
             '<g transform="translate(1 2) scale(0.12 -0.12)"></g></svg>')
    assert smallest_text_px(small, 100 * 4 / 3) == pytest.approx(8 * 4 / 3)  # 10.7 px: under 11
