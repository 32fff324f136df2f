"""Qwen3-Reranker in process (`backend: transformers`): relevance = P("yes") at the last position.

The pair is rendered in the model card's chat format: a fixed system turn asking for a yes/no judgement,
a user turn "<Instruct>: {instruction}\\n<Query>: {query}\\n<Document>: {document}", and an opened
assistant turn holding an empty think block. The score is the softmax over the "yes" and "no" logits at
the final position (harness.retrieval.rerank_llm.p_yes). A prompt longer than `max_length` keeps its
system and assistant parts and loses the end of the user turn (the document's tail), as the model card's
reference code truncates.

Batch-size and pair-order invariance: a pair is left-padded to the next multiple of PAD_MULTIPLE tokens of
its own length and batched only with pairs of that padded length, with position ids counted from its first
real token, on one torch thread. A pair's forward pass then has the same shapes and the same values
whatever its batch-mates, and its float32 logits are the same bits in a batch of 1 or of 8 and in any
pair order (tests/test_rerank_qwen3.py). Padding every pair to its batch's longest pair instead changed
the logits by up to 1e-7 between batch sizes on the test model; no rounding is needed with the buckets.
Implements harness.retrieval.rerank.PairScorer; pair scores are cached by the RerankRetriever.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from harness.config.retrievers import BATCH_SIZE, QWEN3_RERANK_MAX_LENGTH, QWEN3_TASK
from harness.errors import HarnessError
from harness.files import canonical_json, sha256_text
from harness.retrieval.dense import directory_digest, one_torch_thread, resolve_model_dir
from harness.retrieval.rerank_llm import p_yes

SYSTEM = ('Judge whether the Document meets the requirements based on the Query and the Instruct provided. '
          'Note that the answer can only be "yes" or "no".')
PROMPT_HEAD = f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n"
PROMPT_TAIL = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
PAD_MULTIPLE = 64  # each pair's padded length depends on its own length only (see the module docstring)


def query_part(instruction: str, query: str) -> str:
    return f"<Instruct>: {instruction}\n<Query>: {query}\n"


def document_part(document: str) -> str:
    return f"<Document>: {document}"


def user_turn(instruction: str, query: str, document: str) -> str:
    return query_part(instruction, query) + document_part(document)


def padded_length(n: int) -> int:
    return -(-n // PAD_MULTIPLE) * PAD_MULTIPLE


class Qwen3RerankScorer:
    def __init__(
        self,
        model: str,
        *,
        instruction: str = QWEN3_TASK,
        max_length: int = QWEN3_RERANK_MAX_LENGTH,
        batch_size: int = BATCH_SIZE,
        root: Path | None = None,
    ):
        self.name = f"qwen3-rerank:{model}"
        self.model = model
        self.directory = resolve_model_dir(model, root=root)
        self.instruction, self.max_length, self.batch_size = instruction, max_length, batch_size
        pinned = {"weights": directory_digest(self.directory), "head": PROMPT_HEAD, "tail": PROMPT_TAIL,
                  "instruction": instruction, "max_length": max_length, "pad_multiple": PAD_MULTIPLE}
        self.digest = "sha256:" + sha256_text(canonical_json(pinned))
        self._loaded: tuple[Any, Any, int, int, list[int], list[int]] | None = None

    def _load(self):
        if self._loaded is None:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            try:
                tokenizer = AutoTokenizer.from_pretrained(str(self.directory), local_files_only=True)
                lm = AutoModelForCausalLM.from_pretrained(str(self.directory), local_files_only=True).eval()
            except Exception as e:  # noqa: BLE001 - any loader failure is reported the same way
                raise HarnessError(
                    f"cannot load reranker {self.model!r} from {self.directory}: {e}"
                ) from None
            yes, no = (tokenizer.convert_tokens_to_ids(w) for w in ("yes", "no"))
            if yes in (None, tokenizer.unk_token_id) or no in (None, tokenizer.unk_token_id):
                raise HarnessError(f"reranker {self.model!r}: its tokenizer has no single 'yes' / 'no' token")
            head = tokenizer(PROMPT_HEAD, add_special_tokens=False)["input_ids"]
            tail = tokenizer(PROMPT_TAIL, add_special_tokens=False)["input_ids"]
            if len(head) + len(tail) >= self.max_length:
                raise HarnessError(
                    f"reranker {self.model!r}: max_length {self.max_length} leaves no room for the pair"
                )
            self._loaded = (tokenizer, lm, yes, no, head, tail)
        return self._loaded

    def prompt_ids(self, query: str, passage: str) -> list[int]:
        """The token ids of one pair's prompt, its user turn cut to fit max_length."""
        tokenizer, _, _, _, head, tail = self._load()
        body = tokenizer(user_turn(self.instruction, query, passage), add_special_tokens=False)["input_ids"]
        return head + body[: self.max_length - len(head) - len(tail)] + tail

    def logits(self, prompts: Sequence[list[int]]) -> list[tuple[float, float]]:
        """(yes, no) logits at the last position of each prompt, in input order."""
        import torch

        tokenizer, lm, yes, no, _, _ = self._load()
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        order = sorted(
            range(len(prompts)), key=lambda i: padded_length(len(prompts[i]))
        )  # stable: ties by input
        out: dict[int, tuple[float, float]] = {}
        groups: dict[int, list[int]] = {}
        for i in order:
            groups.setdefault(padded_length(len(prompts[i])), []).append(i)
        with one_torch_thread(), torch.no_grad():
            for width, members in groups.items():
                for start in range(0, len(members), self.batch_size):
                    batch = members[start : start + self.batch_size]
                    ids = torch.tensor([[pad] * (width - len(prompts[i])) + prompts[i] for i in batch])
                    mask = torch.tensor(
                        [[0] * (width - len(prompts[i])) + [1] * len(prompts[i]) for i in batch]
                    )
                    positions = (mask.cumsum(1) - 1).clamp(min=0)
                    last = lm(input_ids=ids, attention_mask=mask, position_ids=positions).logits[:, -1, :]
                    for i, row in zip(batch, last.float()):
                        out[i] = (float(row[yes]), float(row[no]))
        return [out[i] for i in range(len(prompts))]

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        return [p_yes(y, n) for y, n in self.logits([self.prompt_ids(query, p) for p in passages])]

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "transformers",
            "model": self.model,
            "digest": self.digest,
            "instruction": self.instruction,
            "max_length": self.max_length,
            "pad_multiple": PAD_MULTIPLE,
            "score": 'softmax of the "yes" and "no" logits at the last position',
        }
