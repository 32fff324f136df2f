"""Settings every arm schema shares (harness.config.arms and the lab's, harness.config.lab)."""

from __future__ import annotations

from typing import Any, Mapping

from harness.config.fields import Flag, ListOf, Optional, Text, setting

DATASETS = Optional(ListOf(Text(non_empty=True), min_len=1))  # None: every dataset


def contextual_headers_setting():
    """`contextual_headers: true`, an option of every arm schema (harness.arms.headers): each chunk's indexed
    text is prefixed with the heading paths of the provisions it touches. Unset (None) is off and is left out
    of the recorded config, so arms without it keep their inputs hash."""
    return setting(None, Optional(Flag()))


def wants_contextual_headers(arm_cfg: Any) -> bool:
    """Whether an arm config (typed, or the plain mapping `harness chunk` passes) switches the option on."""
    value = (
        arm_cfg.get("contextual_headers")
        if isinstance(arm_cfg, Mapping)
        else getattr(arm_cfg, "contextual_headers", None)
    )
    return value is True
