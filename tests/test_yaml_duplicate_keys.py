"""Issue 23, case 7 (duplicate keys): every YAML the harness reads goes through one loader
(harness.files.load_yaml), which refuses a key given twice naming the file, the key and both lines."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.files import load_yaml
from harness.plan.load import load_plan
from harness.study import Study

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo"


def _with_second_line(path: Path, after: str, extra: str) -> int:
    """Insert `extra` after the first line starting with `after`; returns both keys' line numbers."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    i = next(n for n, line in enumerate(lines) if line.lstrip().startswith(after))
    lines.insert(i + 1, extra + "\n")
    path.write_text("".join(lines), encoding="utf-8")
    return i + 1


def test_issue23_case7_a_duplicate_key_in_the_study_config_is_refused(tmp_path):
    root = tmp_path / "demo"
    shutil.copytree(DEMO / "configs", root / "configs")
    first = _with_second_line(root / "configs/study.yaml", "tau_min:", "  tau_min: 50")
    with pytest.raises(
        HarnessError,
        match=re.escape(
            f"{root / 'configs/study.yaml'}: key 'tau_min' is given twice, at line {first} and line "
            f"{first + 1}"
        ),
    ):
        Study.at(root).config


def test_issue23_case7_a_duplicate_key_in_the_plan_is_refused(tmp_path):
    shutil.copytree(DEMO / "plan", tmp_path / "plan")
    plan = tmp_path / "plan/plan.yaml"
    first = _with_second_line(plan, "alpha:", "alpha: 0.10")
    with pytest.raises(HarnessError, match=re.escape(
            f"{plan}: key 'alpha' is given twice, at line {first} and line {first + 1}")):
        load_plan(plan)


def test_the_same_key_in_two_mappings_is_not_a_duplicate(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("a: {k: 1}\nb: {k: 2}\n", encoding="utf-8")
    assert load_yaml(path) == {"a": {"k": 1}, "b": {"k": 2}}


def test_no_module_loads_yaml_but_the_one_loader():
    package = Path(__file__).resolve().parents[1] / "harness"
    loads = [f"{p.relative_to(package)}" for p in sorted(package.rglob("*.py"))
             if re.search(r"yaml\.((safe_|full_|unsafe_)?load(_all)?|compose(_all)?|parse|scan)\(|\bLoader\b",
                          p.read_text(encoding="utf-8"))]
    assert loads == ["files.py"]


# --- aliases (issue 40, case 13) ---


def _bomb(levels: int = 9, width: int = 9) -> str:
    """Nested aliases: each level lists the one before `width` times, so the last expands to width**levels
    nodes (387 million here) from a few hundred characters."""
    lines = ["    l0: &l0 [x]"]
    for i in range(1, levels + 1):
        lines.append(f"    l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def test_issue40_case13_an_alias_bomb_nested_in_the_config_is_refused(tmp_path):
    """A bomb under reader.model_options (which takes any value) passed the schema, and `harness config`
    then spent minutes and gigabytes expanding it; the loader now refuses it, whatever its depth."""
    root = tmp_path / "demo"
    shutil.copytree(DEMO / "configs", root / "configs")
    config = root / "configs/study.yaml"
    text = config.read_text(encoding="utf-8")
    options = re.search(r"\n  model_options: \{max_tokens: 64\}.*\n", text).group()
    config.write_text(
        text.replace(options, "\n  model_options:\n    max_tokens: 64\n" + _bomb(), 1), encoding="utf-8"
    )
    with pytest.raises(HarnessError, match=re.escape(f"{config}: its aliases expand to ")):
        Study.at(root).config


def test_an_alias_bomb_is_refused_at_any_depth(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("a:\n  b:\n    - c:\n" + _bomb().replace("    ", "        "), encoding="utf-8")
    with pytest.raises(
        HarnessError,
        match=r"x\.yaml: its aliases expand to [\d,]{11} nodes from \d+ written; at "
        r"most 10,000 may be added by aliases",
    ):
        load_yaml(path)


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("a: &loop\n  - 1\n  - *loop\n", encoding="utf-8")
    with pytest.raises(HarnessError, match=r"x\.yaml: the node at line 1 holds an alias of itself"):
        load_yaml(path)


def test_a_few_anchors_still_load(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("base: &base {k1: 1.5, b: 0.75}\nbm25: *base\nlist: [*base, *base]\n", encoding="utf-8")
    assert load_yaml(path) == {"base": {"k1": 1.5, "b": 0.75}, "bm25": {"k1": 1.5, "b": 0.75},
                               "list": [{"k1": 1.5, "b": 0.75}] * 2}
