"""The glossary (harness.report.glossary): generated from the registries, docs/glossary.md is its output, an
entry without a description is still listed, and the report's first screen links every code to it."""

from __future__ import annotations

import re
from pathlib import Path

from harness.cli.main import main
from harness.config import arm_kinds
from harness.config.arm_kinds import ArmKindSpec
from harness.metrics import registry
from harness.report.glossary import glossary_markdown, registry_glossary
from harness.report.html import term_linker
from harness.report.model import Definition
from harness.stats import rules

DOC = Path(__file__).resolve().parents[1] / "docs" / "glossary.md"


def test_docs_glossary_is_what_the_registries_generate(capsys):
    assert DOC.read_text(encoding="utf-8") == glossary_markdown(), \
        "docs/glossary.md is stale: run `harness glossary --out docs/glossary.md`"
    assert main(["glossary"]) == 0
    assert capsys.readouterr().out == glossary_markdown()


def test_every_registry_entry_has_an_entry_and_anchors_are_unique():
    entries = registry_glossary()
    terms = {(d.group, d.term) for d in entries}
    assert {("Arm kinds", k) for k in arm_kinds.ARM_KINDS} <= terms
    assert {("Verdicts", v) for v in rules.verdict_labels()} <= terms
    assert ("Metrics (qasper)", "rec@B") in terms and ("Metrics (freshstack)", "mrr@k") in terms
    anchors = [d.anchor for d in entries]
    assert len(anchors) == len(set(anchors))
    assert all(d.text for d in entries)


def test_entries_without_a_description_say_what_their_registry_knows(monkeypatch):
    kinds = dict(arm_kinds.ARM_KINDS)
    kinds["X+Y"] = ArmKindSpec("X+Y", "header-led", calls_per_chunk=2, needs_model=True)
    monkeypatch.setattr(arm_kinds, "ARM_KINDS", kinds)
    monkeypatch.setattr("harness.report.glossary.ARM_KINDS", kinds)
    plain = {
        name: ms.__class__(**{**ms.__dict__, "descriptions": {}}) for name, ms in registry.METRIC_SETS.items()
    }
    monkeypatch.setattr("harness.report.glossary.METRIC_SETS", plain)
    rule = rules.RULES["tost"]
    monkeypatch.setitem(
        rules.RULES, "tost", rule.__class__(**{**rule.__dict__, "verdicts": (*rule.verdicts, "odd")})
    )
    entries = {(d.group, d.term): d.text for d in registry_glossary()}
    assert (
        entries["Arm kinds", "X+Y"] == "arm kind: starts from the header-led chunks; 2 LLM call(s) per chunk"
    )
    assert entries["Metrics (qasper)", "rec@B"] == "a metric of the qasper set"
    assert entries["Verdicts", "odd"] == "a verdict of the tost rule"


def test_metric_descriptions_take_the_budget_and_cut_off():
    from harness.report.glossary import metric_text

    assert "first 512 tokens" in metric_text("qasper", "rec@512t")
    assert "first 120 words" in metric_text("qasper", "complete@120w")
    assert "top 5 chunks" in metric_text("qasper", "hit@5")
    assert "top 10" in metric_text("freshstack", "mrr@10")
    assert "B tokens (or words)" in metric_text("qasper", "rec@B")


# --- linking the first screen ---

DEFS = [Definition("Arms", "S", "header-led"), Definition("Arms", "S+T", "with titles"),
        Definition("Tests", "H3-S", "a test"), Definition("Verdicts", "n.d.", "no detectable difference"),
        Definition("Words", "cluster", "resampling unit", code=False), Definition("Arms", "E", "enriched")]


def _links(html: str) -> list[tuple[str, str]]:
    return re.findall(r'<a class="term" href="#([^"]+)">(.*?)</a>', html)


def test_codes_are_linked_wherever_they_stand_and_never_inside_a_longer_name():
    link = term_linker(DEFS)
    html = link("S - S+T on H3-S: n.d. (S), not SE or E-K or E.")
    assert _links(html) == [("glossary-Arms-S", "S"), ("glossary-Arms-S-plus-T", "S+T"),
                            ("glossary-Tests-H3-S", "H3-S"), ("glossary-Verdicts-n.d.", "n.d."),
                            ("glossary-Arms-S", "S"), ("glossary-Arms-E", "E")]
    assert link("`S+T` and `other`") == (
        '<a class="term" href="#glossary-Arms-S-plus-T"><code>S+T</code></a> and <code>other</code>'
    )


def test_words_are_linked_once_per_text_plural_included_and_the_rest_is_escaped():
    link = term_linker(DEFS)
    html = link("8 clusters; one cluster <b>")
    assert _links(html) == [("glossary-Words-cluster", "clusters")]
    assert html.endswith("one cluster &lt;b&gt;")
