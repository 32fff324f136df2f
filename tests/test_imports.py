"""Every harness module imports on its own (no import cycle depends on import order), and importing the
package changes nothing in os.environ."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "harness"

# Runs in a fresh interpreter: the environment is captured before anything from harness is imported; each
# module is then imported with every harness module removed from sys.modules first, so it loads alone.
SCRIPT = r"""
import importlib, json, os, sys, traceback
before = dict(os.environ)
names = json.loads(sys.argv[1])
failed, changed = {}, {}
for name in names:
    for loaded in [m for m in sys.modules if m == "harness" or m.startswith("harness.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except BaseException:
        failed[name] = traceback.format_exc(limit=-3)
    now = dict(os.environ)
    if now != before:
        changed[name] = sorted(k for k in set(now) | set(before) if now.get(k) != before.get(k))
        os.environ.clear()
        os.environ.update(before)
for name in names:  # and all of them together
    importlib.import_module(name)
after = dict(os.environ)
print(json.dumps({"failed": failed, "changed": changed, "all_together_changed": after != before}))
"""


def module_names() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__main__":  # running it is the CLI; harness.cli.main is imported instead
            continue
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


@pytest.mark.slow  # one interpreter re-imports the package once per module (about half a minute)
def test_every_module_imports_alone_and_leaves_the_environment_alone():
    names = module_names()
    assert len(names) > 50 and "harness.files" in names and "harness.llm.ollama_client" in names
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(names)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["failed"] == {}, "\n".join(report["failed"].values())
    assert report["changed"] == {}  # module -> environment variables its import set or removed
    assert report["all_together_changed"] is False


def test_low_level_file_helpers_import_nothing_above_them():
    tree = ast.parse((PACKAGE / "files.py").read_text())
    imported = {
        n.module if isinstance(n, ast.ImportFrom) else a.name
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in (n.names if isinstance(n, ast.Import) else [n])
    }
    assert {m for m in imported if m and m.startswith("harness")} == {"harness.errors"}
    errors = ast.parse((PACKAGE / "errors.py").read_text())
    assert not [n for n in ast.walk(errors) if isinstance(n, (ast.Import, ast.ImportFrom))]


def _environ_writes(tree: ast.AST) -> list[int]:
    """Lines that assign into, delete from or call a mutating method of os.environ, or call os.putenv."""
    def is_environ(node) -> bool:
        return (
            isinstance(node, ast.Attribute)
            and node.attr == "environ"
            and getattr(node.value, "id", None) == "os"
        )

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            lines += [node.lineno for t in targets if isinstance(t, ast.Subscript) and is_environ(t.value)]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            f = node.func
            if is_environ(f.value) and f.attr in (
                "setdefault",
                "update",
                "pop",
                "popitem",
                "clear",
                "__setitem__",
            ):
                lines.append(node.lineno)
            if f.attr in ("putenv", "unsetenv") and getattr(f.value, "id", None) == "os":
                lines.append(node.lineno)
    return lines


def test_no_harness_module_writes_os_environ():
    writes = {
        path.relative_to(ROOT).as_posix(): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if (lines := _environ_writes(ast.parse(path.read_text())))
    }
    assert writes == {}
    assert _environ_writes(
        ast.parse('import os\nos.environ.setdefault("HF_HUB_OFFLINE", "1")\nos.environ["X"] = "1"')
    )


def test_the_llm_arm_builder_does_not_read_the_environment():
    source = (PACKAGE / "arms" / "llm_arms.py").read_text()
    assert "os.environ" not in source and "getenv" not in source and "import os" not in source
