"""Each class name, private ones included, is defined in one module of the package: two classes under one
name with different meanings make a reader (and an import) pick the wrong one
(docs/working-on-the-harness.md).

Every module is read with `ast`; none is imported."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def class_definitions(package: Path) -> dict[str, list[str]]:
    """class name -> every `path:line` under `package` that defines it (nested classes included)."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                found[node.name].append(f"{path.relative_to(package.parent)}:{node.lineno}")
    return found


def defined_twice(package: Path) -> list[str]:
    return [f"{name}: {' and '.join(where)}" for name, where in sorted(class_definitions(package).items())
            if len(where) > 1]


def test_each_class_name_is_defined_once():
    twice = defined_twice(ROOT / "harness")
    assert not twice, ("class names defined more than once (rename the one whose name says less):\n"
                       + "\n".join(twice))


def test_a_name_defined_in_two_modules_is_named_with_both(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "a.py").write_text("class _Absent:\n    pass\n", encoding="utf-8")
    (package / "sub" / "b.py").write_text("def f():\n    class _Absent:\n        pass\n", encoding="utf-8")
    assert defined_twice(package) == ["_Absent: pkg/a.py:1 and pkg/sub/b.py:2"]
