"""Drift from the freeze: `check_frozen` rebuilds the record (harness.provenance.frozen_record) and refuses
to run on any difference that is not reported-only (DriftError, exit 2) with a diff naming each changed key
(harness.provenance.record_diff); `check_registered_hashes` is the auditor's check of the plan and
amendments alone.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any, Callable

from harness.errors import DriftError, HarnessError
from harness.provenance.freeze import frozen_hash, read_frozen
from harness.provenance.frozen_record import FORMAT, current_record
from harness.provenance.inputs import NON_FILE_PREFIX, current_file_hashes
from harness.provenance.record_diff import Difference, compare_records, format_differences
from harness.provenance.timeline import timeline
from harness.study import Study


def _print_note(text: str) -> None:
    print(text, file=sys.stderr)


def check_frozen(
    study: Study,
    *,
    stage: str,
    strict: bool = False,
    models: bool = True,
    note: Callable[[str], None] = _print_note,
) -> str:
    """Return the frozen hash, or raise DriftError naming every refused difference.

    Differences in reported-only fields (module docstring) are passed to `note` instead, unless
    `strict`, which refuses them too. `models=False` (the stages that read outcomes, never a model: stats,
    compare, report, power, audit) checks everything but what only a model server can tell, so an auditor
    needs no server; the stages that call models (build-arms, score, answer) checked those under this hash."""
    hash_ = frozen_hash(study)
    frozen = read_frozen(study)
    if frozen.get("format") != FORMAT:
        raise DriftError(
            f"{stage}: {study.frozen_path} has format {frozen.get('format')!r}, this harness writes "
            f"{FORMAT}: run `harness freeze` again"
        )
    unloadable = ""
    study.config  # a config the schema refuses is a config error (exit 1, naming file and key), not drift
    try:
        diffs = record_differences(frozen, current_record(study, served_from=None if models else frozen))
    except HarnessError as e:
        diffs = changed_input_files(study, frozen)
        if not diffs:
            raise
        unloadable = f"\n(the changed inputs no longer load: {e})"
    refused = [d for d in diffs if d.refused or strict]
    if refused:
        raise DriftError(
            f"{stage}: refusing to run: {len(refused)} input(s) differ from {study.frozen_path.name} "
            f"(frozen hash {hash_[:12]}):\n{format_differences(refused)}{unloadable}\n"
            "If the change is intended, run `harness freeze` again (`--force REASON` once outcomes exist); "
            "results produced under the old freeze cannot be combined with new ones."
        )
    if diffs:
        note(
            f"{stage}: note: {len(diffs)} recorded value(s) differ from {study.frozen_path.name} "
            f"(reported, not refused):\n{format_differences(diffs)}"
        )
    return hash_


CONFIG_FILE = "configs/study.yaml"


def record_differences(frozen: dict[str, Any], current: dict[str, Any]) -> list[Difference]:
    """compare_records, with one exception for the config file: its bytes are refused like every input's,
    unless its parsed values changed and every such change is reported-only (llm.workers, a spelled-out
    default). A comment or formatting edit changes no value and stays refused: nothing shows it harmless."""
    diffs = compare_records(frozen, current)
    values_changed = any(d.keys[:1] == ("config_file",) for d in diffs)
    value_refused = any(d.refused and d.keys[0] == "config" for d in diffs)
    if not values_changed or value_refused:
        return diffs
    file_keys = ("input_files", CONFIG_FILE)
    return [replace(d, refused=False) if d.keys == file_keys else d for d in diffs]


def changed_input_files(study: Study, frozen: dict[str, Any] | None = None) -> list[Difference]:
    """Byte-level drift of the input files: for when the current inputs cannot be loaded, and for
    `status`, which loads no dataset or model."""
    frozen = read_frozen(study) if frozen is None else frozen
    then = frozen.get("input_files", {})
    now = {k: v for k, v in current_file_hashes(study, then).items() if v is not None}
    then = {k: v for k, v in then.items() if k in now or not k.startswith(NON_FILE_PREFIX)}
    return compare_records({"input_files": then}, {"input_files": now})


def check_registered_hashes(study: Study) -> list[str]:
    """What an auditor checks before recomputing: the plan and amendments (YAML and prose) hash as
    frozen. Unlike check_frozen this needs no model or server. Returns one problem per changed file."""
    frozen = read_frozen(study)
    now = {e.id: e.sha256 for e in timeline(study)}
    then = {k: v.get("sha256") for k, v in frozen.get("registration", {}).items()}
    problems = [
        f"{k}: registered as {str(then.get(k))[:12]}, now {str(now.get(k))[:12]}"
        for k in sorted(set(now) | set(then)) if now.get(k) != then.get(k)
    ]
    prose_then = _prose_hashes(frozen.get("input_files", {}))
    prose_now = _prose_hashes(current_file_hashes(study, prose_then))
    problems += [
        f"{k}: frozen as {str(prose_then.get(k))[:12]}, now {str(prose_now.get(k))[:12]}"
        for k in sorted(set(prose_now) | set(prose_then)) if prose_now.get(k) != prose_then.get(k)
    ]
    return problems


def _prose_hashes(files: dict[str, str | None]) -> dict[str, str | None]:
    """The non-YAML files of plan/ and amendments/ among `files` (the YAML ones are in `registration`)."""
    return {k: v for k, v in files.items()
            if k.startswith(("plan/", "amendments/")) and not k.endswith((".yaml", ".yml"))}
