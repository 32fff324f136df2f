"""The study's input files for the freeze: every file that can move a result, by path and SHA-256.

Two sources, merged into one `input_files` map (path relative to the study root when inside it, else as
configured):
  - the study's own folders (configs/, plan/, amendments/, prompts/, selection/, plugins/), walked: they hold
    nothing but inputs;
  - what each dataset adapter read to build the dataset (LoadedDataset.input_files: JSON/JSONL files,
    Markdown bodies, checkout files sliced or drawn), plus any other file the entry names that its adapter
    declares (Adapter.paths: an exclusion list). A checkout is never walked: its unused files cannot move a
    result. It is identified by the files the study uses and, when it is a git checkout, by its HEAD commit.

The loaded dataset itself is hashed too (documents and questions in canonical JSON), so a change in how an
adapter converts the same bytes is also drift.

Code and files from outside the harness that arms and retrievers use (docs/plugins.md) are recorded under
`plugins`, by what their kind's or type's declaration says (harness.plugins.PluginCode): an installed
module's distribution, version and source SHA-256, a wrapped library's version, a run file's SHA-256. The
key is present only when some entry uses such code, so other studies' records are unchanged.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Iterable, Mapping

from harness.config.arm_kinds import get_kind
from harness.config.plugin_code import PLUGINS_FOLDER, PluginCode
from harness.config.retrievers import retriever_spec
from harness.data.adapters import ADAPTERS
from harness.data.common import LoadedDataset, display_path
from harness.data.load import load_dataset, read_selection
from harness.errors import HarnessError
from harness.files import canonical_json, sha256_file, sha256_text
from harness.plugins import code_identity
from harness.sources.lock import sources_record
from harness.study import Study

STUDY_INPUT_FOLDERS = ("configs", "plan", "amendments", "prompts", "selection", PLUGINS_FOLDER)
NON_FILE_PREFIX = "hub:"  # inputs identified by a content digest, not a file (InputReader.record)


def study_folder_files(study: Study) -> dict[str, str]:
    """Every file of the study's own input folders (hidden files and caches skipped)."""
    out = {}
    for name in STUDY_INPUT_FOLDERS:
        folder = study.root / name
        if not folder.is_dir():
            continue
        for p in sorted(folder.rglob("*")):
            rel = p.relative_to(study.root)
            if p.is_file() and not any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
                out[rel.as_posix()] = sha256_file(p)
    return out


def loaded_datasets(study: Study) -> dict[str, LoadedDataset]:
    """Every configured dataset, loaded through its adapter with the recorded selection."""
    selection = read_selection(study)
    return {name: load_dataset(study, name, selection=selection) for name in sorted(study.config.datasets)}


def dataset_content_record(dataset: LoadedDataset) -> dict[str, Any]:
    documents = [{"doc_id": d.doc_id, "domain": d.domain, "text": d.text, "provenance": d.provenance}
                 for d in dataset.documents]
    questions = [q.to_json() for q in dataset.questions]
    content = canonical_json({"documents": documents, "questions": questions})
    return {"sha256": sha256_text(content), "counts": dict(sorted(dataset.counts.items()))}


def option_paths(study: Study, name: str) -> list[tuple[str, Path]]:
    """(configured value, resolved path) of every existing file or folder the dataset's entry names (its
    adapter's `paths`: data files, checkouts, exclusion lists), written with a "/" (a bare name is not
    recorded here; the adapter's own reads still are)."""
    cfg = study.config.datasets[name]
    found = []
    for value in ADAPTERS[cfg.adapter].paths(cfg):
        path = study.resolve(value)
        if "/" in value and path.exists():
            found.append((value, path))
    return found


def checkout_identity(folder: Path) -> str:
    """"git <HEAD commit>" for a git checkout, else "not a git checkout" (its used files are hashed)."""
    if not (folder / ".git").exists():
        return "not a git checkout"
    try:
        proc = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=30)
    except (FileNotFoundError, subprocess.TimeoutExpired) as e:
        raise HarnessError(f"checkout {folder}: cannot read its commit: {e}") from None
    if proc.returncode != 0:
        raise HarnessError(f"checkout {folder}: cannot read its commit: {proc.stderr.strip()}")
    return f"git {proc.stdout.strip()}"


def input_record(study: Study) -> dict[str, Any]:
    """{"input_files": {path: sha256}, "dataset_content": {name: ...}, "checkouts": {name: {value: id}}},
    plus "sources" (each declared source's data/SOURCES.lock entry: revision or commit, hashes) only when
    the config declares a `source:`, so the record of a study without one is unchanged."""
    files = study_folder_files(study)
    content: dict[str, dict[str, Any]] = {}
    checkouts: dict[str, dict[str, str]] = {}
    for name, dataset in loaded_datasets(study).items():
        files.update((f.path, f.sha256) for f in dataset.input_files)
        content[name] = dataset_content_record(dataset)
        for value, path in option_paths(study, name):
            if path.is_dir():
                checkouts.setdefault(name, {})[value] = checkout_identity(path)
            else:
                files.setdefault(display_path(study.root, path), sha256_file(path))
    record = {"input_files": dict(sorted(files.items())), "dataset_content": content, "checkouts": checkouts}
    sources, plugins = sources_record(study), plugin_record(study)
    record |= {} if sources is None else {"sources": sources}
    return record if plugins is None else record | {"plugins": plugins}


def plugin_record(study: Study) -> dict[str, Any] | None:
    """{"arms": {arm: identity}, "retrievers": {name: identity}} of the entries running outside code, or
    None."""
    arms = {arm: _identity(study, kind.plugin, cfg, f"arms.{arm}") for arm, cfg in sorted(study.arms.items())
            if (kind := get_kind(cfg.kind)).plugin is not None}
    retrievers = {name: _identity(study, spec.plugin, cfg, f"retrievers.{name}")
                  for name, cfg in sorted(study.retrievers.items())
                  if (spec := retriever_spec(cfg)).plugin is not None}
    record = {key: value for key, value in (("arms", arms), ("retrievers", retrievers)) if value}
    return record or None


def unwritten_files(plugins: Mapping[str, Any] | None) -> list[str]:
    """`retriever: path` of every file another tool writes (a run file) that a plugins record (plugin_record,
    or the frozen record's `plugins`) holds as not written yet, sorted."""
    retrievers = (plugins or {}).get("retrievers", {})
    return [f"{name}: {path}" for name, identity in sorted(retrievers.items())
            for path, digest in sorted(identity.get("files", {}).items()) if digest is None]


def _identity(study: Study, code: PluginCode, cfg: Any, key: str) -> dict[str, Any]:
    try:
        return code_identity(code, cfg, study.root)
    except HarnessError as e:
        raise HarnessError(f"{study.config_path}: `{key}`: {e}") from None


def current_file_hashes(study: Study, paths: Iterable[str]) -> dict[str, str | None]:
    """Byte-level view, no parsing: the SHA-256 now (None when missing) of each path in `paths` and of
    every file in the study's own folders. Used when a changed input can no longer be loaded."""
    out: dict[str, str | None] = {}
    for rel in paths:
        if rel.startswith(NON_FILE_PREFIX):
            continue
        path = study.resolve(rel)
        out[rel] = sha256_file(path) if path.is_file() else None
    out.update(study_folder_files(study))
    return out
