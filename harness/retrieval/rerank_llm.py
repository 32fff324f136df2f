"""Embedded fallback reranker: relevance = P("yes") from the local llama.cpp model.

The prompt asks a yes/no relevance question and the model's answer turn is opened; the score is the
softmax over the logits of the "yes" and "no" tokens at the next position (the approach of the
Qwen3 rerankers), so no text is generated and the score is a deterministic function of the prompt.
Implements harness.retrieval.rerank.PairScorer.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from harness.errors import HarnessError
from harness.llm.llamacpp_backend import LlamaCppBackend
from harness.llm.prompts import PromptTemplate
from harness.files import canonical_json, sha256_text

# how each chat format opens a user turn and then the model's answer turn
TURNS = {
    "gemma": ("<start_of_turn>user\n", "<end_of_turn>\n<start_of_turn>model\n"),
}


def p_yes(yes_logit: float, no_logit: float) -> float:
    """Softmax over the two answer logits, written so neither exp can overflow."""
    gap = no_logit - yes_logit
    if gap > 0:
        e = math.exp(-gap)
        return e / (1.0 + e)
    return 1.0 / (1.0 + math.exp(gap))


class LlmYesNoScorer:
    def __init__(
        self, model_cfg: Mapping[str, Any], prompts_dir: str | Path, *, template: str = "rerank_yes.txt"
    ):
        if model_cfg.get("backend") != "llama.cpp":
            raise HarnessError(
                f"the llm-yes reranker runs on a llama.cpp model, got backend {model_cfg.get('backend')!r}"
            )
        self.backend = LlamaCppBackend.from_config(model_cfg)
        self.chat_format = str(self.backend.options["chat_format"])
        if self.chat_format not in TURNS:
            raise HarnessError(
                f"the llm-yes reranker knows the chat formats {', '.join(TURNS)}, not {self.chat_format!r}"
            )
        self.template = PromptTemplate.load(prompts_dir, template)
        self.name = f"llm-yes:{self.backend.model}"
        self._digest: str | None = None

    @property
    def digest(self) -> str:
        """Changes with the weights, the prompt template or the chat format."""
        if self._digest is None:
            pinned = {
                "gguf": self.backend.digest,
                "prompt": self.template.sha256,
                "chat_format": self.chat_format,
            }
            self._digest = sha256_text(canonical_json(pinned))
        return self._digest

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "llm-yes",
            "model": self.backend.model,
            "gguf_sha256": self.backend.digest,
            "prompt": {self.template.path.name: self.template.sha256},
            "chat_format": self.chat_format,
        }

    def _answer_ids(self, llm: Any) -> tuple[int, int]:
        ids = []
        for word in ("yes", "no"):
            tokens = llm.tokenize(word.encode("utf-8"), add_bos=False, special=False)
            if len(tokens) != 1:
                raise HarnessError(
                    f"llm-yes reranker: {word!r} is not a single token for {self.backend.model}"
                )
            ids.append(tokens[0])
        return ids[0], ids[1]

    def _prompt_tokens(self, llm: Any, query: str, passage: str) -> list[int]:
        before, after = TURNS[self.chat_format]
        limit = int(self.backend.options["n_ctx"]) - 1
        text = self.template.render({"query": query, "passage": passage})
        tokens = llm.tokenize((before + text + after).encode("utf-8"), add_bos=True, special=True)
        if len(tokens) <= limit:
            return tokens
        # too long: shorten the passage's tail, keeping the question and instructions intact
        passage_tokens = llm.tokenize(passage.encode("utf-8"), add_bos=False)
        keep = max(len(passage_tokens) - (len(tokens) - limit) - 8, 0)
        short = llm.detokenize(passage_tokens[:keep]).decode("utf-8", errors="ignore")
        return self._prompt_tokens(llm, query, short)

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        import llama_cpp

        llm, lock = self.backend.llama()
        scores = []
        with lock:
            yes, no = self._answer_ids(llm)
            for passage in passages:
                llm.reset()
                llm.eval(self._prompt_tokens(llm, query, passage))
                # without logits_all the Python-side score table is not filled: read the last row directly
                logits = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
                scores.append(p_yes(float(logits[yes]), float(logits[no])))
        return scores
