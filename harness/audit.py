"""`harness audit`: every check of a released study, as one list of provenance Checks in the order printed.

First the anchors (registration, the results manifest, the release history and hash, the re-derivations of
harness.pipeline.rederive), then the frozen plan and the grid, then every family recomputed from the
per-question results and compared row by row with results/stats/<family>.json, then the rescored cells. The
exit code follows harness.provenance.checks: a FAIL is 1, else a NOT VERIFIABLE is 3 (docs/integrity.md).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from harness.errors import HarnessError
from harness.files import read_json
from harness.grid.paths import stats_dir
from harness.grid.states import unscored_cells
from harness.pipeline.rederive import rederive
from harness.pipeline.rescore import DEFAULT_SEED, rescore
from harness.provenance.checks import FAIL, PASS, Check, exit_code
from harness.provenance.drift import check_frozen, check_registered_hashes
from harness.provenance.interim import describe_missing
from harness.provenance.registration import verify_registration
from harness.provenance.release import verify_release_hash, verify_results
from harness.provenance.release_history import verify_release_history
from harness.stats.demotion import decided_plan
from harness.stats.families import check_family, run_plan
from harness.stats.io import load_judge_rates, load_per_question, load_reader_rates, results_frozen_hash
from harness.study import Study


@dataclass(frozen=True)
class AuditSettings:
    rel_tol: float = 1e-9  # for floating-point fields
    registered_hash: str | None = None  # the frozen hash published at registration
    release_hash: str | None = None  # the release hash published at release
    rescore: int | str | None = None  # cells to re-run from the frozen inputs (a number, or "all")
    rescore_seed: int | None = None  # None: harness.pipeline.rescore.DEFAULT_SEED
    threads: int = 1
    progress: bool = False


@dataclass(frozen=True)
class AuditResult:
    checks: tuple[Check, ...]

    @property
    def statuses(self) -> list[str]:
        return [c.status for c in self.checks]

    def summary(self) -> str:
        statuses = self.statuses
        unverifiable = len(statuses) - statuses.count(PASS) - statuses.count(FAIL)
        return (f"audit: {statuses.count(PASS)} PASS, {statuses.count(FAIL)} FAIL"
                + (f", {unverifiable} NOT VERIFIABLE (not a pass)" if unverifiable else ""))

    @property
    def all_passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def exit_code(self) -> int:
        return exit_code(self.statuses)


def audit_study(study: Study, settings: AuditSettings, *, log: Callable[[str], None] = print) -> AuditResult:
    """Every check; drifted inputs are refused as build-arms refuses them (DriftError, exit 2)."""
    if not stats_dir(study).is_dir():
        raise HarnessError(f"{stats_dir(study)}: no released statistics to audit; run `harness stats` first")
    frozen = check_frozen(study, stage="audit", models=False)
    anchors = verify_registration(study, registered_hash=settings.registered_hash) + verify_results(study)
    anchors += verify_release_history(study, release_hash=settings.release_hash)
    anchors += verify_release_hash(study, settings.release_hash) if settings.release_hash is not None else []
    anchors += rederive(study, frozen)
    problems = check_registered_hashes(study)
    scored_under = results_frozen_hash(study)
    checks = [*anchors, *_frozen_checks(study, problems, frozen, scored_under), _grid_check(study, frozen),
              *_family_checks(study, scored_under, settings)]
    if settings.rescore is not None:
        seed = DEFAULT_SEED if settings.rescore_seed is None else settings.rescore_seed
        checks += rescore(study, settings.rescore, seed, frozen, progress=settings.progress, log=log)
    return AuditResult(tuple(checks))


def _frozen_checks(study: Study, problems: list[str], frozen: str, scored_under: str) -> list[Check]:
    """The plan and amendments hash as frozen (`problems`: one per changed file), and the per-question
    results were scored under the freeze."""
    checks = [Check.judged("(frozen)", "plan", False, p) for p in problems]
    if not problems:
        checks.append(Check.judged("(frozen)", "plan", True, "plan and amendments hash as frozen"))
    checks.append(Check.judged("(frozen)", "per-question results", scored_under == frozen,
                               f"scored under frozen config {scored_under[:12]}"
                               + ("" if scored_under == frozen
                                  else f", but {study.frozen_path.name} is {frozen[:12]}")))
    return checks


def _grid_check(study: Study, frozen: str) -> Check:
    """Every configured cell scored under the frozen config, or statistics released as a logged deviation."""
    missing = unscored_cells(study, frozen)
    if not missing:
        return Check.judged("(grid)", "cells", True,
                            "every configured cell is scored under the frozen config")
    released = [read_json(p) for p in sorted(stats_dir(study).glob("*.json"))]
    logged = bool(released) and all(isinstance(r, dict) and r.get("deviation") for r in released)
    return Check.judged("(grid)", "cells", logged, describe_missing(missing)
                        + ("; the statistics were released as a logged deviation" if logged
                           else "; the released statistics record no deviation"))


def _family_checks(study: Study, scored_under: str, settings: AuditSettings) -> list[Check]:
    """Every family of the plan and amendments recomputed and compared with its released file, and every
    released file that is no family of the plan."""
    checks: list[Check] = []
    planned = set()
    plan, table = decided_plan(study), load_per_question(study)  # post-outcome additions demoted
    for result in run_plan(plan, table, judge_rates=load_judge_rates(study),
                           reader_rates=load_reader_rates(study), threads=max(1, settings.threads)):
        planned.add(result.family)
        path = stats_dir(study) / f"{result.family}.json"
        if not path.is_file():
            checks.append(Check.judged(result.family, "(family)", False, f"{path.name} was not released"))
            continue
        recomputed = replace(result, frozen_config_hash=scored_under).to_json()
        checks += check_family(read_json(path), recomputed, rel_tol=settings.rel_tol)
    for path in sorted(stats_dir(study).glob("*.json")):
        if path.stem not in planned:
            checks.append(Check.judged(path.stem, "(family)", False,
                                       f"{path.name} is not a family of the plan"))
    return checks
