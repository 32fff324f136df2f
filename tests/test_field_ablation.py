"""Re-renderings of E: E's cached outputs re-rendered without one field, with one field, or with a field E
does
not index (E+keys, E+entities), no LLM call."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.grid.arms import source_arm
from harness.config.arm_kinds import INDEXED_EXTRAS, RERENDERINGS, get_kind, llm_free_kinds
from harness.cli.main import main
from harness.data.model import Chunk

from pipeline_support import edit_config

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo"


@pytest.fixture(scope="module")
def study_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("ablation")
    for part in ("configs", "data", "plan", "amendments", "prompts", "selection"):
        shutil.copytree(DEMO / part, root / part)
    shutil.copytree(DEMO / "results" / "generations", root / "results" / "generations")
    edit_config(root, lambda c: c["arms"].update({name: {"kind": name, "datasets": ["papers"]}
                                                  for name in INDEXED_EXTRAS}))
    assert main(["freeze", "--study", str(root)]) == 0
    arms = ["E", *RERENDERINGS]
    assert main(["build-arms", "--study", str(root), "--replay", "--no-progress", "--dataset", "papers",
                 *[x for a in arms for x in ("--arm", a)]]) == 0
    return root


def _chunks(root: Path, arm: str) -> list[Chunk]:
    path = root / "results" / "chunks" / "papers" / f"{arm}.jsonl"
    return [Chunk.from_json(json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()]


def test_ablations_reuse_e_chunks_and_drop_exactly_their_fields(study_root):
    e = _chunks(study_root, "E")
    no_title, only_q = _chunks(study_root, "E-no-title"), _chunks(study_root, "E-only-questions")
    assert [c.chunk_id for c in no_title] == [c.chunk_id for c in e] == [c.chunk_id for c in only_q]
    assert all(a.generated == b.generated and a.text == b.text for a, b in zip(e, no_title))
    with_title = [c for c in e if (c.generated or {}).get("title", "").strip()]
    assert with_title, "the demo's E outputs have titles"
    for full, cut in zip(e, no_title):
        prefix_full, prefix_cut = full.indexed_text[: -len(full.text)], cut.indexed_text[: -len(cut.text)]
        title = " ".join(full.generated["title"].split())
        # E's prefix is one line per non-empty field, title first: the ablation drops exactly that line
        lines = prefix_full.strip("\n").split("\n")
        assert prefix_cut.strip("\n").split("\n") == (lines[1:] if title else lines) or (
            title and len(lines) == 1 and prefix_cut == ""
        )
        if title:
            assert lines[0] == title
    for full, q in zip(e, only_q):
        questions = " ".join(" ".join(x.split()) for x in full.generated["questions"] if x.strip())
        assert q.indexed_text == (f"{questions}\n\n{q.text}" if questions else q.text)
    manifest = json.loads(
        (study_root / "results" / "chunks" / "papers" / "E-no-title.manifest.json").read_text()
    )
    assert manifest["ablation"]["source_arm"] == "E" and "llm" not in manifest


def test_keys_and_entities_are_indexed_after_e_fields(study_root):
    """E+keys indexes E's prefix plus the key line; E+entities plus the entities joined by ", "."""
    e = _chunks(study_root, "E")
    extras = {"E+keys": lambda g: " ".join(str(g.get("key") or "").split()),
              "E+entities": lambda g: ", ".join(" ".join(str(x).split()) for x in g.get("entities") or []
                                                if str(x).strip())}
    for arm, line in extras.items():
        built = _chunks(study_root, arm)
        assert [c.chunk_id for c in built] == [c.chunk_id for c in e]
        added = 0
        for full, x in zip(e, built):
            assert x.generated == full.generated and x.text == full.text
            prefix = full.indexed_text[: -len(full.text)].strip("\n")
            extra = line(full.generated)
            lines = [ln for ln in (prefix, extra) if ln]
            assert x.indexed_text == ("\n".join(lines) + "\n\n" + x.text if lines else x.text), (
                arm,
                x.chunk_id,
            )
            added += bool(extra)
        assert added, f"the demo's E outputs have a non-empty {arm[2:]} field"
        manifest = json.loads(
            (study_root / "results" / "chunks" / "papers" / f"{arm}.manifest.json").read_text()
        )
        assert manifest["rerendering"]["fields_indexed"] == list(RERENDERINGS[arm])
        assert manifest["rerendering"]["source_arm"] == "E" and "llm" not in manifest


def test_ablation_kinds_make_no_call_and_are_not_document_chunkers():
    for name in RERENDERINGS:
        kind = get_kind(name)
        assert kind.implemented and not kind.needs_model and kind.calls_per_chunk == 0
        assert name not in llm_free_kinds()


def test_an_ablation_without_a_built_e_names_what_to_build(tmp_path, capsys):
    for part in ("configs", "data", "plan", "amendments", "prompts", "selection"):
        shutil.copytree(DEMO / part, tmp_path / part)
    assert main(["freeze", "--study", str(tmp_path)]) == 0
    code = main(["build-arms", "--study", str(tmp_path), "--no-progress", "--dataset", "papers",
                 "--arm", "E-no-title"])
    assert code != 0 and "needs the built chunk set of E" in capsys.readouterr().err


def test_two_e_arms_make_the_source_ambiguous(tmp_path, capsys):
    for part in ("configs", "data", "plan", "amendments", "prompts", "selection"):
        shutil.copytree(DEMO / part, tmp_path / part)
    edit_config(tmp_path, lambda cfg: cfg["arms"].__setitem__("E2", {"kind": "E", "model": "embedded",
                                                                    "datasets": ["papers"]}))
    from harness.errors import HarnessError
    from harness.study import Study

    with pytest.raises(HarnessError, match=r"2 apply \(E, E2\)"):
        source_arm(Study.at(tmp_path), "E-no-title", "papers")


def test_of_names_the_source_among_several_e_arms(tmp_path):
    from harness.errors import HarnessError
    from harness.study import Study

    for part in ("configs", "data", "plan", "amendments", "prompts", "selection"):
        shutil.copytree(DEMO / part, tmp_path / part)

    def arms(cfg):
        cfg["arms"]["E2"] = {"kind": "E", "model": "embedded", "datasets": ["papers"]}
        cfg["arms"]["E-no-title"] = {"kind": "E-no-title", "of": "E2", "datasets": ["papers"]}
        cfg["arms"]["E-no-summary"] = {"kind": "E-no-summary", "of": "S", "datasets": ["papers"]}
    edit_config(tmp_path, arms)
    study = Study.at(tmp_path)
    assert source_arm(study, "E-no-title", "papers") == "E2"
    with pytest.raises(
        HarnessError, match=r"`of: S` must name an arm of kind E built on dataset papers \(those: E, E2\)"
    ):
        source_arm(study, "E-no-summary", "papers")


def test_an_ablation_is_built_after_its_source_as_any_derived_arm():
    from harness.arms.build import sources_first
    from harness.study import Study

    assert sources_first(Study.at(DEMO), "papers", ["E-no-title", "S", "E"]) == ["E", "E-no-title", "S"]


def test_of_is_refused_on_an_arm_that_re_renders_nothing():
    from harness.config import load_study_config
    from harness.errors import HarnessError

    raw = {
        "study": "x",
        "arms": {"S": {"kind": "S", "of": "E"}},
        "datasets": {"p": {"adapter": "jsonl", "metric_set": "qasper", "documents": "d", "questions": "q"}},
    }
    with pytest.raises(HarnessError, match=r"arms\.S\.of.*does not apply to an arm of kind S"):
        load_study_config(raw, path="configs/study.yaml", default_name="x")
