"""Fast greedy (temperature 0) JSON-schema constrained decoding for llama-cpp-python, same output.

llama-cpp-python samples with the chain penalties -> grammar -> greedy, so the grammar checks every one
of the vocabulary's candidates at every step (262k for Gemma 3): most of the decoding time. This module
swaps that chain, for one call, for llama.cpp's common-sampler trick: apply the penalties, take the
argmax, and ask the grammar about that one token; only when the grammar rejects it, ask about the
candidates at or above the 64th-highest logit, and only when all of those are rejected, about all of
them. The pick is the argmax among the tokens the grammar allows, ties to the lowest token id, exactly
as the greedy sampler picks after the grammar has masked the rest, so the text is identical.

Everything else (chat template, tokenisation, KV-cache reuse, stop strings, end-of-generation tokens,
max_tokens, usage counts) stays llama-cpp-python's own: `greedy_json` runs `create_chat_completion`
with `Llama._init_sampler` overridden on the instance for the duration of the call. That method is
private; `supported` checks it is there and the caller falls back to the plain path when it is not.
"""

from __future__ import annotations

import ctypes
from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)], align=True)
SHORTLIST = 64  # candidates asked about before the whole vocabulary, when the argmax is rejected


def supported(llm: Any) -> bool:
    """Whether this llama-cpp-python exposes what the override needs."""
    try:
        import llama_cpp
    except ImportError:
        return False
    needed = ("llama_sampler_init_penalties", "llama_sampler_init_grammar", "llama_sampler_apply",
              "llama_sampler_accept", "llama_sampler_free", "llama_get_logits_ith", "llama_token_data_array")
    return (
        all(hasattr(llama_cpp, name) for name in needed)
        and ctypes.sizeof(llama_cpp.llama_token_data) == TOKEN_DATA.itemsize
        and callable(getattr(type(llm), "_init_sampler", None))
        and hasattr(llm, "_model") and hasattr(llm, "last_n_tokens_size") and hasattr(llm, "_n_vocab")
    )


class GreedyGrammarSampler:
    """Stands in for llama-cpp-python's sampler chain (penalties, grammar, greedy): `sample(ctx, idx)`
    picks and accepts a token like `llama_sampler_sample` does with that chain."""

    def __init__(self, llm: Any, grammar: Any, *, repeat_penalty: float, penalty_last_n: int):
        import llama_cpp

        self._ll = llama_cpp
        self.n_vocab = int(llm._n_vocab)
        vocab = llm._model.vocab
        if llama_cpp.llama_vocab_n_tokens(vocab) != self.n_vocab:
            raise ValueError("vocabulary size and logits width differ")
        # the same constructors and arguments as Llama._init_sampler (frequency/presence penalties 0)
        self._penalties = llama_cpp.llama_sampler_init_penalties(
            self.n_vocab, penalty_last_n, repeat_penalty, 0.0, 0.0)
        self._grammar = llama_cpp.llama_sampler_init_grammar(
            vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8"))
        if not self._penalties or not self._grammar:
            self.close()
            raise ValueError("llama.cpp could not build the penalties or grammar sampler")
        self._ids = np.arange(self.n_vocab, dtype=np.int32)
        self._cur = np.zeros(self.n_vocab, dtype=TOKEN_DATA)
        self.steps = 0
        self.shortlist_checks = 0
        self.full_checks = 0

    def _apply(self, sampler: Any, cur: np.ndarray) -> None:
        ll = self._ll
        arr = ll.llama_token_data_array(
            data=cur.ctypes.data_as(ll.llama_token_data_p), size=len(cur), selected=-1, sorted=False)
        ll.llama_sampler_apply(sampler, ctypes.byref(arr))

    def _grammar_pick(self, cur: np.ndarray) -> int | None:
        """The argmax of `cur` (ids ascending) once the grammar has masked it; None if all are masked."""
        self._apply(self._grammar, cur)
        logits = cur["logit"]
        best = int(np.argmax(logits))
        return None if logits[best] == -np.inf else int(cur["id"][best])

    def sample(self, ctx: Any, idx: int = -1) -> int:
        ll = self._ll
        ptr = ll.llama_get_logits_ith(ctx.ctx, idx)
        if not ptr:
            raise RuntimeError(f"llama.cpp has no logits for output {idx}")
        cur = self._cur
        cur["id"] = self._ids
        cur["logit"] = np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))
        cur["p"] = 0.0
        self._apply(self._penalties, cur)  # in place, order kept: cur["id"] stays 0..n-1
        logits = cur["logit"]
        self.steps += 1
        token = int(np.argmax(logits))  # first maximum, as the greedy sampler picks
        if logits[token] == -np.inf or self._grammar_pick(cur[token : token + 1].copy()) is None:
            token = self._fallback(cur, logits)
        ll.llama_sampler_accept(self._penalties, token)
        ll.llama_sampler_accept(self._grammar, token)
        return token

    def _fallback(self, cur: np.ndarray, logits: np.ndarray) -> int:
        # Every token at or above the threshold is in the shortlist (ties included, ids ascending), so
        # if the grammar allows any of them, the allowed maximum and all its ties are among them.
        if self.n_vocab > SHORTLIST:
            threshold = np.partition(logits, self.n_vocab - SHORTLIST)[self.n_vocab - SHORTLIST]
            if threshold > -np.inf:
                self.shortlist_checks += 1
                picked = self._grammar_pick(cur[logits >= threshold])  # boolean index: a copy
                if picked is not None:
                    return picked
        self.full_checks += 1
        picked = self._grammar_pick(cur)
        return 0 if picked is None else picked  # all masked: the greedy sampler picks index 0

    def close(self) -> None:
        for name in ("_penalties", "_grammar"):
            sampler = getattr(self, name, None)
            if sampler:
                self._ll.llama_sampler_free(sampler)
            setattr(self, name, None)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


@contextmanager
def fast_greedy_grammar(llm: Any) -> Iterator[list[GreedyGrammarSampler]]:
    """Within the block, Llama.generate samples greedy+grammar calls with GreedyGrammarSampler; other
    sampler settings get llama-cpp-python's own chain. Yields the list of samplers made (for counts)."""
    made: list[GreedyGrammarSampler] = []
    shadowed = vars(llm).get("_init_sampler")  # an override already in place (nested use), else None
    original = llm._init_sampler  # bound: the class method, or the override being nested in

    def init_sampler(**kw: Any) -> Any:
        if (
            kw.get("grammar") is not None and kw.get("temp") == 0.0 and kw.get("logits_processor") is None
            and kw.get("frequency_penalty", 0.0) == 0.0 and kw.get("presence_penalty", 0.0) == 0.0
        ):
            sampler = GreedyGrammarSampler(
                llm,
                kw["grammar"],
                repeat_penalty=float(kw.get("repeat_penalty", 1.0)),
                penalty_last_n=int(llm.last_n_tokens_size),
            )
            made.append(sampler)
            return sampler
        return original(**kw)

    llm._init_sampler = init_sampler
    try:
        yield made
    finally:
        if shadowed is None:
            del llm._init_sampler
        else:
            llm._init_sampler = shadowed
        if isinstance(getattr(llm, "_sampler", None), GreedyGrammarSampler):
            llm._sampler = None
        for sampler in made:
            sampler.close()


def greedy_json(
    llm: Any,
    messages: Sequence[Mapping[str, str]],
    schema: Mapping[str, Any],
    *,
    max_tokens: int,
    repeat_penalty: float = 1.0,
    seed: int | None = None,
) -> tuple[str, int, int]:
    """Greedy schema-constrained chat completion: (text, prompt_tokens, completion_tokens), the same as
    `llm.create_chat_completion(..., response_format={"type": "json_object", "schema": schema},
    temperature=0)` gives, faster. Uses llm.chat_format / chat_handler as set."""
    fmt = {"type": "json_object", "schema": dict(schema)}
    with fast_greedy_grammar(llm):
        resp = llm.create_chat_completion(
            messages=list(messages), response_format=fmt, temperature=0.0, max_tokens=max_tokens,
            repeat_penalty=repeat_penalty, seed=seed,
        )
    usage = resp.get("usage") or {}
    return (
        resp["choices"][0]["message"].get("content") or "",
        int(usage.get("prompt_tokens", 0)),
        int(usage.get("completion_tokens", 0)),
    )
