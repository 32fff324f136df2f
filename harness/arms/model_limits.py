"""Per-arm, per-dataset model limits: an arm's `model_options` override its model's options.

    models:
      qwen7b: {backend: ollama, name: qwen2.5:7b, num_ctx: 16384, num_predict: 1000}
    arms:
      CR: {kind: CR, model: qwen7b, model_options: {num_predict: 120, num_ctx: {freshstack: 32768}}}

A value is either one setting for every dataset or a mapping dataset -> setting; a dataset the mapping
does not name keeps the model's own value. The effective options are what the backend is built from and
what the arm's inputs hash records, so a changed limit rebuilds the arm.
"""

from __future__ import annotations

from typing import Any, Mapping

from harness.errors import HarnessError


def effective_model_config(
    arm_name: str, arm_cfg: Mapping[str, Any], model_cfg: Mapping[str, Any], dataset: str | None,
    datasets: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    overrides = arm_cfg.get("model_options")
    if overrides is None:
        return dict(model_cfg)
    if not isinstance(overrides, Mapping):
        raise HarnessError(f"arm {arm_name}: `model_options` must be a mapping, got {overrides!r}")
    out = dict(model_cfg)
    for option, value in overrides.items():
        if option in ("backend", "name", "package", "path"):
            raise HarnessError(f"arm {arm_name}: `model_options.{option}` would change the model itself; "
                               "define another entry under `models:` instead")
        if isinstance(value, Mapping):
            unknown = sorted(set(map(str, value)) - set(datasets)) if datasets is not None else []
            if unknown:
                raise HarnessError(f"arm {arm_name}: `model_options.{option}` names dataset {unknown[0]!r}, which "
                                   f"the config does not define ({', '.join(datasets)})")
            if dataset is not None and dataset in value:
                out[option] = value[dataset]
        else:
            out[option] = value
    return out
