"""What the paid arms will cost, before any LLM call (`harness estimate`).

The real prompt-building code runs (harness.arms.llm_arms.annotate_document: the real templates, chunk
texts, whole documents for CR cut to the model's window, the rolling key dictionary) against a counting
stand-in for the LLM session. The stand-in answers every call with a well-formed object holding a fresh
placeholder key, so the dictionary grows one key per call as it would with real keys. What a model would
write into later prompts (the previous chunk's summary) is unknown before paying: it is counted as
`summary_tokens` per call that follows a chunk. An arm with `repeats: N` makes every call N times (the
prompts of a repeat differ only in what the model wrote earlier, unknown here), so its counts are N times
one run's. Tokens are cl100k counts of the rendered prompt;
output tokens are `output_tokens` per call (default: the model's output cap, an upper bound). Retries
(seeds 1-3 after an unparseable answer) are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Mapping, Sequence

from harness.arms.build import header_led_chunks
from harness.arms.llm_arms import annotate_document, arm_templates, select_documents
from harness.arms.model_limits import effective_model_config
from harness.arms.repeats import repeat_count
from harness.config.arm_kinds import CONTEXTUAL, get_kind
from harness.data.load import load_dataset, read_selection
from harness.errors import HarnessError
from harness.llm.registry import make_backend
from harness.llm.session import JsonResult
from harness.grid.cells import chunk_sets
from harness.study import Study
from harness.tokens import count_tokens

OUTPUT_CAP_OPTIONS = ("max_tokens", "num_predict")  # the backends' names for the output cap


@dataclass(frozen=True)
class ArmEstimate:
    dataset: str
    arm: str
    model: str
    billed: bool
    calls: int
    prompt_tokens: int  # counted from the rendered prompts
    summary_allowance_tokens: int  # previous-summary slots, unknown before the calls
    output_tokens: int
    price_in_per_mtok: float | None
    price_out_per_mtok: float | None
    repeats: int = 1  # generation runs (harness.arms.repeats); every count above covers all of them

    @property
    def input_tokens(self) -> int:
        return self.prompt_tokens + self.summary_allowance_tokens

    @property
    def usd(self) -> float | None:
        """Dollars; 0 for a local (unbilled) model; None for a billed model without prices."""
        if not self.billed:
            return 0.0
        if self.price_in_per_mtok is None or self.price_out_per_mtok is None:
            return None
        return (
            self.input_tokens * self.price_in_per_mtok + self.output_tokens * self.price_out_per_mtok
        ) / 1e6

    def to_json(self) -> dict:
        return dict(self.__dict__) | {"input_tokens": self.input_tokens, "usd": self.usd}


class CountingSession:
    """Stands in for LlmSession: counts every prompt, answers with the right shape, calls nothing."""

    def __init__(self, prompt_token_limit: int | None):
        self.backend = SimpleNamespace(prompt_token_limit=prompt_token_limit)
        self.calls = 0
        self.prompt_tokens = 0

    def call_json(
        self, prompt, *, schema: Mapping[str, Any], seeds: Sequence[int], validate, options=None
    ) -> JsonResult:
        text = prompt if isinstance(prompt, str) else "\n".join(m["content"] for m in prompt)
        self.calls += 1
        self.prompt_tokens += count_tokens(text)
        answer = {
            name: ([] if spec.get("type") == "array" else "") for name, spec in schema["properties"].items()
        }
        if "key" in answer:
            answer["key"] = f"topic {self.calls}"
        return JsonResult(validate(answer), 1, False)


def estimate_arm(study: Study, dataset, arm: str, *, header_chunks, output_tokens: int | None,
                 summary_tokens: int) -> ArmEstimate:
    cfg = study.arms[arm]
    kind = get_kind(cfg.kind)
    model_cfg = effective_model_config(arm, cfg, study.models[cfg.model], dataset.name, study.config.datasets)
    backend = make_backend(model_cfg)  # builds only: loads and contacts nothing
    cap = next((int(backend.options[k]) for k in OUTPUT_CAP_OPTIONS if k in backend.options), None)
    per_call_out = output_tokens if output_tokens is not None else cap
    if per_call_out is None:
        raise HarnessError(f"arm {arm}: model {cfg.model} has no output cap; pass --output-tokens")
    templates = arm_templates(study, arm)
    session = CountingSession(backend.prompt_token_limit)
    following = 0  # calls whose prompt carries a previous chunk's summary
    for doc in select_documents(arm, cfg, dataset.documents):
        chunks = header_chunks[doc.doc_id]
        before = session.calls
        annotate_document(session, kind, templates, doc, chunks, [0])
        if kind.annotation != CONTEXTUAL and chunks:
            following += (session.calls - before) * (len(chunks) - 1) // len(chunks)
    runs = repeat_count(cfg)
    return ArmEstimate(
        dataset=dataset.name,
        arm=arm,
        model=cfg.model,
        billed=bool(backend.billed),
        calls=runs * session.calls,
        prompt_tokens=runs * session.prompt_tokens,
        summary_allowance_tokens=runs * following * summary_tokens,
        output_tokens=runs * session.calls * per_call_out,
        repeats=runs,
        price_in_per_mtok=getattr(model_cfg, "price_in_per_mtok", None),
        price_out_per_mtok=getattr(model_cfg, "price_out_per_mtok", None),
    )


def estimate_study(
    study: Study, *, output_tokens: int | None = None, summary_tokens: int = 60
) -> list[ArmEstimate]:
    """One estimate per (dataset, per-chunk LLM arm) the config names, in config order. Planned kinds are
    skipped, and so is M-TP: its one call per document lists E-K's keys, which exist only once E-K is
    built."""
    if summary_tokens < 0 or (output_tokens is not None and output_tokens < 0):
        raise HarnessError("--output-tokens and --summary-tokens must be >= 0")
    selection = read_selection(study)
    todo = [cs for cs in chunk_sets(study) if cs.arm.kind.implemented and cs.arm.kind.annotation is not None]
    out = []
    for name in dict.fromkeys(cs.dataset.name for cs in todo):
        dataset = load_dataset(study, name, selection=selection)
        headers = header_led_chunks(study, dataset.documents)
        out += [estimate_arm(study, dataset, cs.arm.name, header_chunks=headers, output_tokens=output_tokens,
                             summary_tokens=summary_tokens) for cs in todo if cs.dataset.name == name]
    return out

