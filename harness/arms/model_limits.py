"""Per-arm, per-dataset model limits: an arm's `model_options` override its model's options.

    models:
      qwen7b: {backend: ollama, name: qwen2.5:7b, num_ctx: 16384, num_predict: 1000}
    arms:
      CR: {kind: CR, model: qwen7b, model_options: {num_predict: 120, num_ctx: {freshstack: 32768}}}

A value is either one setting for every dataset or a mapping dataset -> setting; a dataset the mapping
does not name keeps the model's own value. The effective model is what the backend is built from and
what the arm's inputs hash records, so a changed limit rebuilds the arm.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Mapping

from harness.config.arms import UNSET, option_on
from harness.config.fields import replace
from harness.errors import HarnessError


def effective_model_config(
    arm_name: str,
    arm_cfg: Any,
    model_cfg: Any,
    dataset: str | None,
    datasets: Mapping[str, Any] | None = None,
) -> Any:
    """The arm's model for `dataset`: the typed model entry with the arm's overrides applied."""
    overrides = getattr(arm_cfg, "model_options", None) or {}
    known = {f.name for f in fields(model_cfg)}
    changes: dict[str, Any] = {}
    for option, value in overrides.items():
        if option not in known:
            raise HarnessError(f"arm {arm_name}: `model_options.{option}` is not an option of "
                               f"{model_cfg.backend} models ({', '.join(sorted(known))})")
        if isinstance(value, Mapping):
            unknown = sorted(set(map(str, value)) - set(datasets)) if datasets is not None else []
            if unknown:
                raise HarnessError(
                    f"arm {arm_name}: `model_options.{option}` names dataset {unknown[0]!r}, which "
                    f"the config does not define ({', '.join(datasets)})"
                )
        resolved = option_on(value, dataset)
        if resolved is not UNSET:
            changes[option] = resolved
    return replace(model_cfg, **changes) if changes else model_cfg
