"""Indexed-text renderings of DESIGN section 4 (S, S+T, E/E-K/PF, CR)."""

import re
from dataclasses import replace

import pytest

from harness.arms.registry import render
from harness.config.arm_kinds import ARM_KINDS
from harness.arms.render import render_context, render_enriched, render_section_path, render_text
from harness.data.model import Chunk
from harness.errors import InputError

BASE = Chunk("d", "d#0000-00000000", "Source text.", ((0, 12),), "Guide > Setup", 1, 1, ("paragraph",))


def gen(**fields):
    return replace(BASE, generated=fields)


def test_s_indexes_the_text_and_keeps_source_text():
    out = render_text(BASE)
    assert out.indexed_text == "Source text." and out.text == BASE.text and out.spans == BASE.spans


def test_s_plus_t_prefixes_the_section_path_and_a_blank_line():
    assert render_section_path(BASE).indexed_text == "Guide > Setup\n\nSource text."
    assert render_section_path(replace(BASE, section_path="")).indexed_text == "Source text."


def test_e_rendering_orders_fields_joins_lists_and_omits_empty_ones():
    c = gen(
        title="Install",
        summary="How to\n install.",
        keywords=["php", " composer ", ""],
        questions=["How?", "Why?"],
    )
    assert (
        render_enriched(c).indexed_text
        == "Install\nHow to install.\nphp, composer\nHow? Why?\n\nSource text."
    )
    c = gen(title="", summary="Only a summary.", keywords=[], questions=None)
    assert render_enriched(c).indexed_text == "Only a summary.\n\nSource text."
    assert render_enriched(gen()).indexed_text == "Source text."


def test_cr_prefixes_the_context():
    assert (
        render_context(gen(context="Part of the setup guide.")).indexed_text
        == "Part of the setup guide.\n\nSource text."
    )
    assert render_context(gen(context="")).indexed_text == "Source text."


def test_enriched_arms_share_the_e_rendering():
    c = gen(title="T", summary="S", keywords=["k"], questions=["q?"])
    assert {render(arm, c).indexed_text for arm in ("E", "E-K", "PF", "M")} == {"T\nS\nk\nq?\n\nSource text."}


def test_paid_rendering_without_generated_fields_names_the_chunk():
    with pytest.raises(InputError, match=r"chunk d#0000-00000000 has no generated fields"):
        render_enriched(BASE)


def test_unknown_arm_is_named():
    with pytest.raises(InputError, match=r"unknown arm kind 'X'; known: S, S\+T"):
        render("X", BASE)
    assert set(ARM_KINDS) >= {"S", "S+T", "E", "E-K", "CR", "PF", "F512c", "F256t", "P", "FL"}


def test_a_prefix_line_collapses_every_unicode_whitespace_run_to_one_space():
    # the characters a regex's \s matches, as the released chunk sets were rendered with `\s+` -> " "
    spaces = "".join(chr(i) for i in range(0x3001) if re.fullmatch(r"\s", chr(i)))
    assert len(spaces) > 20 and "\x1c" in spaces and "\u2028" in spaces and "\u3000" in spaces
    title = f"{spaces}Set{spaces}up\u200bthe{spaces[::-1]}guide{spaces}"
    assert render_enriched(gen(title=title)).indexed_text == "Set up\u200bthe guide\n\nSource text."
