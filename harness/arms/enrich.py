"""Enrichment arms E, E-K (one call per chunk) and PF (one call per field), per docs/design.md, Arms.

A document's chunks are visited in order: each prompt holds the previous chunk's summary and, for E,
the rolling key dictionary as it stood before the call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from harness.arms.keydict import NOT_PROVIDED, KeyDictionary, normalise_key
from harness.data.model import GENERATED_FIELDS, Chunk
from harness.llm.prompts import PromptTemplate
from harness.llm.session import JsonResult, LlmSession

FIRST_CHUNK = "(first chunk)"
UNAVAILABLE = "(unavailable)"
NO_SECTION = "(no section)"

_STR = {"type": "string"}


def _texts(min_items: int, max_items: int) -> dict[str, Any]:
    return {"type": "array", "items": _STR, "minItems": min_items, "maxItems": max_items}


# Item caps keep small models from listing on until max_tokens (which leaves broken JSON). No string
# length caps: llama-cpp-python expands maxLength into deeply nested grammar rules, slowing sampling.
ENRICH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": _STR,
        "summary": _STR,
        "keywords": _texts(5, 8),
        "entities": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": _STR, "type": _STR},
                "required": ["name", "type"],
            },
            "maxItems": 6,
        },
        "questions": _texts(2, 3),
        "key": _STR,
        "related_keys": _texts(0, 3),
    },
    "required": ["title", "summary", "keywords", "entities", "questions", "key", "related_keys"],
}
PF_FIELDS = ("title", "summary", "keywords", "questions")
PF_SCHEMAS: dict[str, dict[str, Any]] = {
    name: {"type": "object", "properties": {name: ENRICH_SCHEMA["properties"][name]}, "required": [name]}
    for name in PF_FIELDS
}


def empty_generated() -> dict[str, Any]:
    """Every generated field present, empty: what a failed call leaves."""
    empty: dict[str, Any] = {name: [] for name in GENERATED_FIELDS}
    empty.update(title="", summary="", key="", context="", llm_failed=False)
    return empty


def _clean_str(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) else None


def _clean_str_list(value: Any) -> list[str] | None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    return [v.strip() for v in value if v.strip()]


def _clean_entities(value: Any) -> list[dict[str, str]] | None:
    if not isinstance(value, list):
        return None
    out = []
    for item in value:
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("name"), str)
            or not isinstance(item.get("type"), str)
        ):
            return None
        if item["name"].strip():
            out.append({"name": item["name"].strip(), "type": item["type"].strip()})
    return out


_CLEANERS: dict[str, Callable[[Any], Any]] = {
    "title": _clean_str,
    "summary": _clean_str,
    "keywords": _clean_str_list,
    "entities": _clean_entities,
    "questions": _clean_str_list,
    "key": _clean_str,
    "related_keys": _clean_str_list,
    "context": _clean_str,
}


def fields_validator(names: Sequence[str]) -> Callable[[Any], dict[str, Any] | None]:
    """Accept a JSON object only if every named field is present with the right type (None = retry)."""

    def validate(obj: Any) -> dict[str, Any] | None:
        if not isinstance(obj, dict):
            return None
        cleaned = {}
        for name in names:
            value = _CLEANERS[name](obj.get(name))
            if value is None:
                return None
            cleaned[name] = value
        return cleaned

    return validate


def section_text(chunk: Chunk) -> str:
    return chunk.section_path or NO_SECTION


def previous_summary_text(position: int, previous: Mapping[str, Any] | None) -> str:
    if position == 0:
        return FIRST_CHUNK
    if previous is None or previous.get("llm_failed") or not previous.get("summary"):
        return UNAVAILABLE
    return str(previous["summary"])


def enrich_prompt_values(
    chunk: Chunk, position: int, total: int, previous_summary: str, dictionary: str
) -> dict[str, str]:
    return {
        "section_path": section_text(chunk),
        "position": f"{position + 1} of {total}",
        "previous_summary": previous_summary,
        "key_dictionary": dictionary,
        "chunk_text": chunk.text,
    }


@dataclass
class DocumentOutcome:
    """Per-document result of an LLM arm: one generated dict per chunk plus what was counted."""

    generated: list[dict[str, Any]] = field(default_factory=list)
    failures: int = 0  # chunks left with llm_failed
    failed_calls: int = 0  # calls (fields, for PF) that never parsed
    retries: int = 0
    truncated: int = 0
    evictions: int = 0

    def count_call(self, result: JsonResult, generated: dict[str, Any], *, truncated: bool = False) -> bool:
        """Count one call's retries and truncation (`truncated`: the prompt was cut before the call); a call
        that never parsed marks the chunk's `generated` llm_failed. True when the call gave a value."""
        self.retries += result.attempts - 1
        self.truncated += int(truncated or result.truncated)
        if result.value is None:
            generated["llm_failed"] = True
            self.failed_calls += 1
            return False
        return True

    def add_chunk(self, generated: dict[str, Any]) -> None:
        """Append one chunk's generated fields, counting it as a failure if any of its calls failed."""
        self.failures += int(generated["llm_failed"])
        self.generated.append(generated)


def enrich_document(
    session: LlmSession,
    template: PromptTemplate,
    chunks: Sequence[Chunk],
    *,
    seeds: Sequence[int],
    use_keys: bool,
) -> DocumentOutcome:
    """E (use_keys) or E-K: one call per chunk, in order, with the rolling dictionary."""
    out = DocumentOutcome()
    keys = KeyDictionary()
    validate = fields_validator(ENRICH_SCHEMA["required"])
    previous: dict[str, Any] | None = None
    for i, chunk in enumerate(chunks):
        dictionary = keys.render() if use_keys else NOT_PROVIDED
        prompt = template.render(
            enrich_prompt_values(chunk, i, len(chunks), previous_summary_text(i, previous), dictionary)
        )
        result = session.call_json(prompt, schema=ENRICH_SCHEMA, seeds=seeds, validate=validate)
        generated = empty_generated()
        if out.count_call(result, generated):
            generated.update(result.value)
            own = normalise_key(result.value["key"])
            # related keys count only if the model saw them in the dictionary (E-K saw none)
            generated["related_keys"] = (
                keys.filter_related(result.value["related_keys"], own) if use_keys else []
            )
            generated["key"] = keys.observe(own, i)
        out.add_chunk(generated)
        previous = generated
    out.evictions = keys.evictions
    return out


def pf_document(
    session: LlmSession,
    templates: Mapping[str, PromptTemplate],
    chunks: Sequence[Chunk],
    *,
    seeds: Sequence[int],
) -> DocumentOutcome:
    """PF: four calls per chunk (title, summary, keywords, questions), same context as E minus keys."""
    out = DocumentOutcome()
    previous: dict[str, Any] | None = None
    for i, chunk in enumerate(chunks):
        values = enrich_prompt_values(chunk, i, len(chunks), previous_summary_text(i, previous), NOT_PROVIDED)
        generated = empty_generated()
        for name in PF_FIELDS:
            prompt = templates[name].render(values)
            result = session.call_json(
                prompt, schema=PF_SCHEMAS[name], seeds=seeds, validate=fields_validator([name])
            )
            if out.count_call(result, generated):
                generated[name] = result.value[name]
        out.add_chunk(generated)
        previous = generated
    return out
