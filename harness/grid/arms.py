"""A configured arm's declared kind (harness.config.arm_kinds), its prompt files and the arm it is built from,
and where an arm or retriever entry applies."""

from __future__ import annotations

from typing import Any

from harness.config.arm_kinds import ArmKindSpec, get_kind
from harness.errors import HarnessError, InputError
from harness.study import Study


def applies_to(entry: Any, dataset: str, arm: str | None = None) -> bool:
    """Arms and retrievers may name `datasets: [...]`, retrievers also `arms: [...]`; by default they
    apply everywhere."""
    only, arms = entry.datasets, getattr(entry, "arms", None)
    return (only is None or dataset in only) and (arm is None or arms is None or arm in arms)


def arm_kind(study: Study, arm: str) -> ArmKindSpec:
    """The kind of a configured arm; an arm missing from the config or without `kind:` is an error."""
    cfg = study.arms.get(arm)
    if cfg is None:
        raise HarnessError(f"{study.config_path}: no arm `{arm}` (configured: {', '.join(study.arms)})")
    try:
        return get_kind(cfg.kind)  # the config schema admits only declared kinds
    except InputError as e:
        raise HarnessError(f"{study.config_path}: arm `{arm}`: {e}") from None


def buildable_arm_kind(study: Study, arm: str) -> ArmKindSpec:
    """arm_kind, refusing a kind that is only planned (before any work starts)."""
    kind = arm_kind(study, arm)
    kind.require_implemented(arm)
    return kind


def arm_prompt_files(study: Study, arm: str) -> dict[str, str]:
    """role -> template file under prompts/ for a configured arm: its kind's templates, with the arm's own
    `prompts:` overrides (a paraphrased prompt). A named file that does not exist is an error
    naming the arm and the key; the freeze hashes every file under prompts/."""
    cfg = study.arms[arm]
    kind = arm_kind(study, arm)
    overrides = getattr(cfg, "prompts", None) or {}
    for role, name in overrides.items():
        if role not in kind.prompts:  # the schema checks this too; a hand-built config may skip it
            raise HarnessError(
                f"{study.config_path}: arms.{arm}.prompts.{role}: kind {kind.name} has no prompt "
                f"role {role!r} (its roles: {', '.join(kind.prompts) or 'none'})"
            )
        if not (study.prompts_dir / name).is_file():
            raise HarnessError(
                f"{study.config_path}: arms.{arm}.prompts.{role}: {name!r} is not a file under "
                f"{study.prompts_dir}"
            )
    return {role: overrides.get(role, name) for role, name in kind.prompts.items()}


def source_arm(study: Study, arm: str, dataset: str | None = None) -> str:
    """The arm whose built chunks a derived arm starts from: the one its `of:` names, checked to have a chunk
    set of its own; for a kind declaring the kind of that arm (`of_kind`), `of:` may be left out when exactly
    one such arm applies to `dataset` (the dataset is needed for those kinds only)."""
    kind = arm_kind(study, arm)
    of: str | None = getattr(study.arms[arm], "of", None)
    if kind.of_kind is not None:
        return _source_of_kind(study, arm, kind.of_kind, dataset, of)
    if of is None:
        raise HarnessError(f"{study.config_path}: arm `{arm}` has no `of:`, so it starts from no other arm")
    if of not in study.arms:
        raise HarnessError(f"{study.config_path}: arm `{arm}`: `of: {of}` names no configured arm "
                           f"(configured: {', '.join(study.arms)})")
    if arm_kind(study, of).retrieval_time:
        raise HarnessError(
            f"{study.config_path}: arm `{arm}`: `of: {of}` is expanded at retrieval time and has "
            "no chunk set to start from"
        )
    if getattr(study.arms[of], "repeats", None):
        raise HarnessError(
            f"{study.config_path}: arm `{arm}`: `of: {of}` has repeated generations; an add-on arm "
            "starts from one generation run"
        )
    return of


def _source_of_kind(study: Study, arm: str, of_kind: str, dataset: str | None, of: str | None) -> str:
    """`of:`, else the one configured arm of kind `of_kind` that applies to `dataset`. That kind's robustness
    variants (another prompt, repeated generations) are not its outputs and are never a source."""
    if dataset is None:
        raise HarnessError(
            f"{study.config_path}: arm `{arm}` starts from an arm of kind {of_kind} on a given "
            "dataset, and none was given"
        )
    found = [name for name, cfg in study.arms.items() if cfg.kind == of_kind and applies_to(cfg, dataset)
             and not getattr(cfg, "prompts", None) and not getattr(cfg, "repeats", None)]
    if of is not None:
        if of not in found:
            raise HarnessError(f"{study.config_path}: arm `{arm}`: `of: {of}` must name an arm of kind "
                               f"{of_kind} built on dataset {dataset} (those: {', '.join(found) or 'none'})")
        return of
    if len(found) != 1:
        raise HarnessError(
            f"{study.config_path}: arm `{arm}` re-renders the chunks of the one arm of kind "
            f"{of_kind} on dataset {dataset}, but {len(found)} apply ({', '.join(found) or 'none'}); "
            "name one with `of:`"
        )
    return found[0]
