"""The package's imports flow one way: from a stage down to the spine and the instruments below it.

Every import of a harness module, at module level or inside a function, is read with `ast` (no module is
imported), and each must point to its own layer or a lower one, in the order docs/working-on-the-harness.md
states. Inside functions, harness modules are imported only by the CLI (each command loads
its stage when it runs, so `harness --help` stays quick); anywhere else a function-level import would only
hide a circle.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "harness"

# lowest first; a layer may import its own modules and those of the layers before it
LAYERS = (
    ("harness", "errors", "files", "memory", "seeded_draw", "study_lock", "timing", "tokens"),
    ("inference",),
    ("config",),
    ("task_runners",),
    ("plugins",),
    ("plan",),
    ("study",),
    ("data",),
    ("sources",),
    ("grid",),
    ("metrics",),
    ("chunking",),
    ("llm",),
    ("retrieval",),
    ("provenance",),
    ("arms",),
    ("pipeline",),
    ("stats",),
    ("audit",),
    ("analyses",),
    ("lab",),
    ("rehearsal",),
    ("report",),
    ("cli", "__main__"),
    ("api",),
)
LAZY_ALLOWED = ("cli", "__main__")
# the one import up from the base: the package's public names (harness.Study, harness.compare) are the API's,
# loaded on first use by a module __getattr__ in harness/__init__.py, so `import harness` stays quick
PUBLIC_NAMES = (("harness", "harness.api"),)

# imports the layer order allows but the design does not: (importer, imported, why), each a module or package
KEPT_APART = (
    ("harness.arms", "harness.retrieval",
     "arm builders do not rank: what an arm needs from ranking is handed in (BuildInputs.embed_chunks)"),
)


def layer_of(module: str) -> int:
    """harness.<part>[.rest] -> the index of the layer holding <part> (harness itself: the base)."""
    parts = module.split(".")
    key = parts[1] if len(parts) > 1 else parts[0]
    for i, names in enumerate(LAYERS):
        if key in names:
            return i
    raise AssertionError(f"{module}: its package `{key}` is in no layer of tests/test_layering.py (add it)")


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def harness_imports(path: Path, root: Path = ROOT) -> list[tuple[str, int, bool]]:
    """(imported harness module, line, inside a function) for every import statement of the file."""
    module = module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    in_function = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                   for n in ast.walk(f)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            targets = [target]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        out += [
            (t, node.lineno, id(node) in in_function)
            for t in targets
            if t == "harness" or t.startswith("harness.")
        ]
    return out


def package_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def public_name(here: str, target: str, inside: bool) -> bool:
    """The exempt import: the package's public names loaded inside its module __getattr__."""
    return inside and (here, target) in PUBLIC_NAMES


def test_every_import_points_down_or_sideways():
    upward = []
    for path in package_files():
        here = module_name(path)
        for target, line, inside in harness_imports(path):
            if layer_of(target) > layer_of(here) and not public_name(here, target, inside):
                upward.append(f"{path.relative_to(ROOT)}:{line}: {here} imports {target}")
    assert not upward, "imports against the layer order:\n" + "\n".join(upward)


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def kept_apart_violations(path: Path, root: Path = ROOT) -> list[str]:
    here = module_name(path, root)
    return [f"{path.relative_to(root)}:{line}: {here} imports {target} ({why})"
            for importer, imported, why in KEPT_APART if _within(here, importer)
            for target, line, _ in harness_imports(path, root) if _within(target, imported)]


def test_modules_kept_apart_do_not_import_each_other():
    found = [v for path in package_files() for v in kept_apart_violations(path)]
    assert not found, "imports the design keeps apart:\n" + "\n".join(found)


def test_no_function_level_harness_import_outside_the_cli():
    lazy = []
    for path in package_files():
        here = module_name(path)
        if layer_of(here) == layer_of("harness.cli"):
            continue
        lazy += [f"{path.relative_to(ROOT)}:{line}: imports {target} inside a function"
                 for target, line, inside in harness_imports(path)
                 if inside and not public_name(here, target, inside)]
    assert not lazy, "function-level imports of harness modules:\n" + "\n".join(lazy)


def test_the_statistics_import_no_pipeline_module():
    """Statistics sit above the pipeline in the order, but read what it wrote through the grid's paths, never
    its modules, and run their Ray tasks on harness.task_runners, below every stage."""
    found = [f"{path.relative_to(ROOT)}:{line}: imports {target}"
             for path in sorted((PACKAGE / "stats").rglob("*.py"))
             for target, line, _ in harness_imports(path) if layer_of(target) == layer_of("harness.pipeline")]
    assert not found, "statistics importing the pipeline:\n" + "\n".join(found)


def test_no_harness_module_is_imported_by_a_string():
    found = []
    for path in package_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and str(node.args[0].value).startswith("harness")
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: import_module({node.args[0].value!r})")
    assert not found, "harness modules reached through importlib strings:\n" + "\n".join(found)


def test_every_package_has_a_layer():
    for path in package_files():
        layer_of(module_name(path))


def test_the_readme_states_the_same_order():
    text = (ROOT / "docs" / "working-on-the-harness.md").read_text(encoding="utf-8")
    match = re.search(r"^Layers, lowest first:\s*(.+)$", text, re.M)
    assert match, "docs/working-on-the-harness.md: no `Layers, lowest first: ...` line"
    stated = [set(re.findall(r"\w+", group)) for group in match.group(1).split("->")]
    assert stated == [set(names) for names in LAYERS]


@pytest.mark.parametrize("source, upward", [
    ("from harness.stats.plan import Plan\n", True),
    ("def f():\n    from harness.pipeline import score\n", True),
    ("from harness.errors import HarnessError\n", False),
])
def test_the_check_sees_an_upward_import(tmp_path, source, upward):
    """The checker itself: a config module importing a stage (at module level or in a function) is found."""
    probe = tmp_path / "harness" / "config" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text(source, encoding="utf-8")
    found = [t for t, _, _ in harness_imports(probe, tmp_path) if layer_of(t) > layer_of("harness.config")]
    assert bool(found) is upward


@pytest.mark.parametrize("where, source, found", [
    ("arms/addon_arms.py", "from harness.retrieval.registry import RetrieverContext\n", True),
    ("arms/build.py", "def f():\n    import harness.retrieval.dense\n", True),
    ("arms/build.py", "from harness.grid.paths import chunks_path\n", False),
])
def test_the_check_sees_an_import_of_modules_kept_apart(tmp_path, where, source, found):
    probe = tmp_path / "harness" / where
    probe.parent.mkdir(parents=True)
    probe.write_text(source, encoding="utf-8")
    assert bool(kept_apart_violations(probe, tmp_path)) is found


@pytest.mark.parametrize("source, exempt", [
    ("def __getattr__(name):\n    import harness.api as api\n", True),
    ("import harness.api\n", False),  # at module level: `import harness` would load the whole package
    ("def __getattr__(name):\n    from harness.pipeline import score\n", False),
])
def test_only_the_public_names_may_point_up_from_the_base(tmp_path, source, exempt):
    probe = tmp_path / "harness" / "__init__.py"
    probe.parent.mkdir(parents=True)
    probe.write_text(source, encoding="utf-8")
    here = module_name(probe, tmp_path)
    found = [t for t, _, inside in harness_imports(probe, tmp_path)
             if layer_of(t) > layer_of(here) and not public_name(here, t, inside)]
    assert (not found) == exempt
