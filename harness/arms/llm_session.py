"""An LLM session for one arm built outside the per-chunk annotators (M-TP's per-document calls): the same
generation cache, spend ledger, retry seeds and study-wide spend cap as harness.arms.llm_arms, and a
manifest record in the same shape (status reads its `cost.calls`)."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

from harness.arms.llm_arms import arm_templates
from harness.arms.model_limits import effective_model_config
from harness.config.arm_kinds import ArmKindSpec
from harness.errors import HarnessError
from harness.llm.cache import GenerationCache
from harness.llm.ledger import SpendLedger, study_spend_usd
from harness.llm.prompts import PromptTemplate
from harness.llm.registry import make_backend
from harness.llm.session import LlmSession
from harness.study import Study
from harness.grid.paths import generations_path


@dataclass
class OpenSession:
    arm: str
    kind: ArmKindSpec
    model: str
    session: LlmSession
    templates: Mapping[str, PromptTemplate]
    seeds: Sequence[int]
    ledger: SpendLedger
    cache: GenerationCache

    def manifest(self, **extra: Any) -> dict[str, Any]:
        totals = self.ledger.totals().as_dict()
        run = {k: totals.pop(k) for k in ("fresh_calls", "cache_hits")}
        return {
            "arm": self.arm,
            "kind": self.kind.name,
            "model": self.model,
            "backend": dict(self.session.identity),
            "prompts": {t.path.name: t.sha256 for t in self.templates.values()},
            "cost": totals,
            "run": run
            | {"cache_file": self.cache.path.name, "torn_bytes_dropped": self.cache.torn_bytes_dropped},
            **extra,
        }


@contextmanager
def open_session(
    study: Study,
    arm: str,
    arm_cfg: Any,
    kind: ArmKindSpec,
    *,
    dataset: str | None,
    fresh: bool,
    replay: bool,
) -> Iterator[OpenSession]:
    """`fresh` ignores cached answers (new ones are appended); `replay` answers only from the cache."""
    if fresh and replay:
        raise HarnessError(f"arm {arm}: fresh (regenerate) and replay (cache only) contradict each other")
    model_name = arm_cfg.model
    if model_name not in study.models:
        raise HarnessError(
            f"arm {arm}: model {model_name!r} is not defined under `models:` in {study.config_path}"
        )
    model_cfg = effective_model_config(arm, arm_cfg, study.models[model_name], dataset, study.config.datasets)
    llm = study.config.llm
    templates = arm_templates(study, arm)
    path = generations_path(study, model_name)
    with GenerationCache(path, fresh=fresh, read_only=replay) as cache:
        backend = make_backend(model_cfg, replay_from=cache if replay else None)
        cap = llm.spend_cap_usd
        ledger = SpendLedger(
            arm, None if cap is None else float(cap), spent_before_usd=study_spend_usd(path.parent)
        )
        retry = (
            None
            if model_cfg.retry_temperature is None
            else {"temperature": float(model_cfg.retry_temperature)}
        )
        session = LlmSession(backend, cache, ledger, retry_options=retry)
        yield OpenSession(
            arm, kind, model_name, session, templates, [model_cfg.seed, *llm.retry_seeds], ledger, cache
        )
