"""Code from outside the harness that decides a result: a function named `module:function`, found in the
study's own plugins/ folder or in an installed package, and the optional libraries the chunker adapters wrap
(docs/plugins.md). The kinds and types that run such code declare it (harness.config.plugin_code).

What the freeze records of such code is said here once (`code_identity`): a study plugin by its path
under plugins/ (every file of that folder is an input file the freeze hashes, so editing one is drift named
by its file), an installed module by its distribution, version and the SHA-256 of the module's source file,
an adapter by the library's distribution and version. An arm's class and parameters are in its config.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.metadata as metadata
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator, Mapping

from harness.config.plugin_code import EXTRA, PLUGINS_FOLDER, PluginCode, split_callable
from harness.errors import HarnessError
from harness.files import sha256_file

_MODULE_PREFIX = (
    "harness_study_plugin_"  # study plugins are loaded under a private name (no clash with packages)
)


def study_module_file(root: Path | None, module: str) -> Path | None:
    """The file under the study's plugins/ that defines `module` (a .py file or a package's __init__.py), or
    None when the study has none (the module is then imported as an installed one)."""
    if root is None:
        return None
    base = root / PLUGINS_FOLDER / Path(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _folder_digest(folder: Path) -> str:
    """The plugin's files' bytes: a private module name per content, so an edited plugin is loaded afresh."""
    digest = hashlib.sha256()
    files = (
        [folder]
        if folder.is_file()
        else sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)
    )
    for path in files:
        digest.update(path.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _load_study_module(root: Path, module: str) -> ModuleType:
    """The study plugin `module`: its top-level part loaded from plugins/ under a private name (a package
    keeps
    its relative imports), then the rest imported inside it."""
    top, _, rest = module.partition(".")
    file = study_module_file(root, top)
    assert file is not None
    package = file.parent if file.name == "__init__.py" else None
    name = f"{_MODULE_PREFIX}{_folder_digest(package or file)}_{top}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, file, submodule_search_locations=[str(package)] if package else None)
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[name] = loaded
        try:
            with _no_bytecode():
                spec.loader.exec_module(loaded)
        except BaseException:
            del sys.modules[name]
            raise
    if not rest:
        return sys.modules[name]
    with _no_bytecode():
        return importlib.import_module(f"{name}.{rest}")


@contextlib.contextmanager
def _no_bytecode() -> Iterator[None]:
    """The study's plugins/ is part of what it releases: importing a plugin writes no __pycache__ there."""
    before = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        yield
    finally:
        sys.dont_write_bytecode = before


def load_callable(text: str, root: Path | None, *, what: str) -> Callable[..., Any]:
    """The function `text` (`module:function`) names, from the study's plugins/ first, else an installed
    module; `what` names the config entry in every error."""
    try:
        module_name, name = split_callable(text)
    except HarnessError as e:
        raise HarnessError(f"{what}: {e}") from None
    where = (
        f"{PLUGINS_FOLDER}/"
        if study_module_file(root, module_name.partition(".")[0])
        else "installed packages"
    )
    try:
        if where == "installed packages":
            module = importlib.import_module(module_name)
        else:
            module = _load_study_module(root, module_name)
    except ModuleNotFoundError as e:
        raise HarnessError(
            f"{what}: cannot import `{module_name}` (looked in the study's {PLUGINS_FOLDER}/ folder, "
            f"then installed packages): {e}"
        ) from None
    except Exception as e:  # the plugin's own import failed: its message, not the harness's traceback
        raise HarnessError(
            f"{what}: importing `{module_name}` from {where} failed: {type(e).__name__}: {e}"
        ) from None
    function = getattr(module, name, None)
    if not callable(function):
        raise HarnessError(f"{what}: module `{module_name}` ({where}) has no function `{name}`")
    return function


def import_extra(module: str, *, what: str) -> ModuleType:
    """An optional library an adapter wraps, imported only when an entry uses it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise HarnessError(
            f"{what}: needs `{module}`, which is not installed ({e}); install the optional extra: "
            f"pip install -e '.[{EXTRA}]'"
        ) from None


def _distribution_of(module: str) -> str | None:
    names = metadata.packages_distributions().get(module.partition(".")[0])
    return sorted(names)[0] if names else None


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def callable_identity(text: str, root: Path | None) -> dict[str, Any]:
    """What the freeze records of a `module:function`: a study plugin's path under plugins/ (its bytes are an
    input file), or an installed module's distribution, version and source file SHA-256. Nothing is
    imported: the module's file is found, not run."""
    module, _ = split_callable(text)
    file = study_module_file(root, module.partition(".")[0])
    if file is not None:
        return {"callable": text, "study_plugin": file.relative_to(root).as_posix()}
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or spec.origin is None or not Path(spec.origin).is_file():
        raise HarnessError(
            f"`{text}`: module `{module}` is neither under the study's {PLUGINS_FOLDER}/ folder "
            "nor an installed module with a source file"
        )
    distribution = _distribution_of(module)
    return {"callable": text, "package": distribution, "version": distribution and _version(distribution),
            "sha256": sha256_file(spec.origin)}


def code_identity(code: PluginCode, entry: Any, root: Path | None) -> dict[str, Any]:
    """What the freeze records of an arm or retriever entry whose kind or type declares `code`."""
    if code.callable_key is not None:
        return callable_identity(str(_value(entry, code.callable_key)), root)
    if code.files_key is not None:
        paths = sorted(set((_value(entry, code.files_key) or {}).values()))
        return {"files": {p: _file_digest(p, root) for p in paths}}
    return {"package": code.package, "version": code.package and _version(code.package)}


def _value(entry: Any, key: str) -> Any:
    return entry.get(key) if isinstance(entry, Mapping) else getattr(entry, key)


def _file_digest(value: str, root: Path | None) -> str | None:
    path = Path(value) if root is None or Path(value).is_absolute() else root / value
    return sha256_file(path) if path.is_file() else None
