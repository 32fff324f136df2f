"""Arm kinds a study may declare before this harness can build them.

A registered plan can name arms whose builders come later (the add-on arms of the amendments). They are
declared in configs/study.yaml with one of these kinds so the plan validates at freeze time; `build-arms`
skips them (and refuses them when asked for by name), and `score` and the no-interim-looks rule leave
them out until a builder exists. Nothing here fakes a builder.
"""

from __future__ import annotations

from typing import Any, Mapping

DECLARED_ONLY_KINDS: dict[str, str] = {
    "M": "key-based merge of an LLM arm's chunks (`of:` names the arm, E or E-K)",
    "RM": "count-matched random merges of adjacent chunks (5 seeds, averaged per question)",
    "SM": "count-matched merges of the most similar adjacent chunks",
    "M-TP": "key merge after one consolidation call per document (TopicGPT-style)",
    "E+KX": "retrieval-time insertion of key-linked chunks",
    "E+AX": "retrieval-time insertion of an equal number of adjacent chunks",
    "E+SX": "retrieval-time insertion of same-section chunks",
    "E+keys": "E with the subtopic key indexed as well",
    "E+entities": "E with the entities indexed as well",
}


def is_declared_only(arm_cfg: Mapping[str, Any] | None) -> bool:
    return isinstance(arm_cfg, Mapping) and arm_cfg.get("kind") in DECLARED_ONLY_KINDS
