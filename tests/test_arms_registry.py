"""Arm kinds are declared in one place (harness.config.arm_kinds) and built through one table
(harness.arms.registry) with the same names: every shipped arm resolves, planned kinds fail clearly, and no
other module spells a kind."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from harness.arms.enrich import PF_FIELDS
from harness.arms.builder import BuildInputs
from harness.arms.registry import BUILDERS, build_chunks
from harness.config.arm_kinds import (
    ABLATIONS, ARM_KINDS, PF_PROMPTS, RERENDERINGS, buildable_kinds, get_kind, lab_kinds, llm_free_kinds,
)
from harness.cli.main import main
from harness.errors import HarnessError, InputError
from arms_support import declare_planned_kind
from pipeline_support import edit_config, make_llm_free_study
from harness.grid.paths import chunks_path, results_dir

REPO = Path(__file__).resolve().parents[1]
SHIPPED = [REPO / "configs" / "study.yaml", REPO / "examples" / "demo" / "configs" / "study.yaml"]
ADDON = ["M", "RM", "SM", "M-TP", "E+KX", "E+AX", "E+SX"]


@pytest.mark.parametrize("config", SHIPPED, ids=lambda p: p.parent.parent.name)
def test_every_shipped_arm_resolves_to_a_registered_kind(config):
    arms = yaml.safe_load(config.read_text(encoding="utf-8"))["arms"]
    for arm, cfg in arms.items():
        kind = get_kind(cfg["kind"])
        assert kind.implemented, arm
        assert kind.needs_model == ("model" in cfg), arm
        for template in kind.prompts.values():
            assert (config.parent.parent / "prompts" / template).is_file(), (arm, template)


def test_every_shipped_kind_is_buildable():
    assert [k for k in ARM_KINDS if not ARM_KINDS[k].implemented] == []
    assert set(buildable_kinds()) == {"S", "S+T", "F512c", "F256t", "P", "FL", "E", "E-K", "CR", "PF", *ADDON,
                                      "fixed", "sentence", "provisions", "qes-dp", "qes-greedy", "E+keys",
                                      "E+entities", *(f"E-{w}-{f}" for w in ("no", "only")
                                                      for f in ("title", "summary", "keywords", "questions")),
                                      "python", "langchain", "llamaindex", "chonkie"}


def test_a_planned_kind_is_registered_but_not_buildable(monkeypatch):
    planned = declare_planned_kind(monkeypatch)
    assert [k for k in ARM_KINDS if not ARM_KINDS[k].implemented] == [planned]
    assert planned not in buildable_kinds()
    with pytest.raises(HarnessError, match=r"arm `Kx` has kind 'E\+future', which the plan names but this "
                                           r"harness does not implement yet \(buildable kinds: S, S\+T, "):
        build_chunks(get_kind(planned), BuildInputs((), {}, dict, arm="Kx"))


def test_add_on_kinds_start_from_another_arm():
    assert all(ARM_KINDS[k].derived and ARM_KINDS[k].of_required for k in ADDON)
    assert [k for k in ADDON if ARM_KINDS[k].retrieval_time] == ["E+KX", "E+AX", "E+SX"]
    with pytest.raises(HarnessError, match=r"arm `X` \(kind E\+KX\) is expanded at retrieval time"):
        build_chunks(get_kind("E+KX"), BuildInputs((), {}, dict, arm="X"))


def test_rerenderings_start_from_an_arm_of_kind_e():
    """Field ablations and E+keys / E+entities are built from another arm as the add-on arms are, but `of:`
    may default to the one arm of kind E."""
    assert [k for k, spec in ARM_KINDS.items() if spec.of_kind is not None] == list(RERENDERINGS)
    assert set(ABLATIONS) < set(RERENDERINGS) and {"E+keys", "E+entities"} < set(RERENDERINGS)
    assert all(ARM_KINDS[k].derived and ARM_KINDS[k].of_kind == "E" and not ARM_KINDS[k].of_required
               and not ARM_KINDS[k].needs_model for k in RERENDERINGS)


def test_every_declared_kind_has_exactly_one_builder_entry():
    """Same names in the same order; a planned kind and a retrieval-time expansion have a rendering and no
    `build`; only the lab kinds have a lab chunker."""
    assert list(BUILDERS) == list(ARM_KINDS)
    for name, spec in ARM_KINDS.items():
        assert (BUILDERS[name].build is None) == (not spec.implemented or spec.retrieval_time), name
        assert (BUILDERS[name].lab_chunker is not None) == (spec in lab_kinds()), name


def test_unknown_kind_names_the_choices():
    with pytest.raises(InputError, match=r"unknown arm kind 'E2'; known: S, S\+T, .*E\+SX"):
        get_kind("E2")


def test_building_a_planned_arm_fails_before_any_work(tmp_path, capsys, monkeypatch):
    planned = declare_planned_kind(monkeypatch)
    study = make_llm_free_study(tmp_path / "s", freeze=False)
    edit_config(study.root, lambda c: c["arms"].__setitem__("M", {"kind": planned, "of": "S"}))
    assert main(["select", "--study", str(study.root)]) == 0
    assert (
        main(["freeze", "--study", str(study.root)]) == 0
    )  # the plan may register a kind before it is built
    capsys.readouterr()
    assert main(["status", "--study", str(study.root)]) == 0
    assert "not buildable yet, skipped: M" in capsys.readouterr().out
    assert main(["build-arms", "--study", str(study.root), "--arm", "M", "--no-progress"]) == 1
    assert (
        f"arm `M` has kind '{planned}', which the plan names but this harness does not implement yet"
        in capsys.readouterr().err
    )
    assert not (results_dir(study) / "chunks").exists()  # refused before any work
    assert (
        main(["build-arms", "--study", str(study.root), "--no-progress"]) == 0
    )  # the others build; M is skipped
    assert "not built (declared for the plan, no builder yet): M" in capsys.readouterr().out
    assert not chunks_path(study, "papers", "M").exists()


def test_every_command_refuses_an_unknown_kind(tmp_path, capsys):
    study = make_llm_free_study(tmp_path / "s", freeze=False)
    edit_config(study.root, lambda c: c["arms"].__setitem__("X", {"kind": "Sx"}))
    for command in ("select", "freeze", "status"):
        assert main([command, "--study", str(study.root)]) == 1
        assert "`arms.X.kind` is 'Sx', not a known value (did you mean 'S'?)" in capsys.readouterr().err
    assert not study.frozen_path.exists()


def test_registry_agrees_with_the_modules_it_points_to():
    assert list(PF_PROMPTS) == list(PF_FIELDS)
    assert ARM_KINDS["PF"].calls_per_chunk == len(PF_FIELDS)
    assert llm_free_kinds() == [
        "S",
        "S+T",
        "F512c",
        "F256t",
        "P",
        "FL",
        "fixed",
        "sentence",
        "provisions",
        "qes-dp",
        "qes-greedy",
    ]


def test_no_other_module_spells_an_arm_kind():
    """String constants equal to a multi-letter kind name appear only in the declarations and the builder
    table keyed by them (the window chunkers share their names with their arms, so harness/chunking is the
    one exception). `python` is also a retriever type and the freeze's Python version key."""
    names = {k for k in ARM_KINDS if len(k) > 1} - {"python"}
    found = []
    for path in sorted((REPO / "harness").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel in ("harness/config/arm_kinds.py", "harness/arms/registry.py") or rel.startswith(
            "harness/chunking/"
        ):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in names:
                found.append(f"{rel}:{node.lineno}: {node.value!r}")
    assert found == []
