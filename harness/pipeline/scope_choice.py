"""The retrieval scope `harness init` registers: each question's own scope, or one pooled index.

When a question searches only a few chunks, every arm retrieves nearly all of them: hit@5 sits at 100% and
the budgeted metrics at their ceiling whatever the chunking, so the study cannot decide. `init` therefore
pools the documents into one index (`retrieval_scope: pooled`, docs/design.md, Data model) when the median
question's own scope holds at most SATURATING_CHUNKS header-led (S) chunks or at most SATURATING_BUDGETS
times the reader's budget in source tokens, and says which it chose and why.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from harness.chunking.header_led import header_led_chunks
from harness.config.datasets import DOCUMENT_SCOPE, POOLED_SCOPE
from harness.data.common import LoadedDataset
from harness.tokens import count_tokens

SATURATING_CHUNKS = 10  # twice hit@5's cut-off: the top 5 then holds half the scope
SATURATING_BUDGETS = 2  # the budget then covers half the scope's source tokens


@dataclass(frozen=True)
class ScopeChoice:
    scope: str  # DOCUMENT_SCOPE or POOLED_SCOPE
    median_chunks: float  # S chunks in the median question's own scope
    median_tokens: float  # source tokens in it
    budget: int  # the reader's budget the tokens are compared with
    pooled_documents: int  # documents in the pooled index (the union of every question's scope)
    saturates: bool  # the median own scope is small enough for every arm to retrieve nearly all of it

    @property
    def reason(self) -> str:
        own = (f"a question's own scope holds a median of {self.median_chunks:g} S chunks and "
               f"{self.median_tokens:,.0f} source tokens")
        if self.scope == POOLED_SCOPE:
            return (
                f"{own}, so every arm would retrieve nearly all of it (at most {SATURATING_CHUNKS} chunks or "
                f"{SATURATING_BUDGETS}x the {self.budget}-token budget saturates); one pooled index over "
                f"{self.pooled_documents} documents instead"
            )
        if self.saturates:  # and pooling adds nothing: every question already searches every document
            return (f"{own}, every question's scope already being all {self.pooled_documents} documents: "
                    "expect metrics near their ceiling (a larger corpus would help)")
        return f"{own}: enough for rankings to differ"


def choose_scope(dataset: LoadedDataset, budget: int) -> ScopeChoice:
    """Pooled when the median question's own scope would saturate the metrics, else each question's own."""
    chunks, tokens = {}, {}
    for doc in dataset.documents:
        chunks[doc.doc_id] = len(header_led_chunks(doc))
        tokens[doc.doc_id] = count_tokens(doc.text)
    own_chunks = [sum(chunks.get(d, 0) for d in q.scope) for q in dataset.questions]
    own_tokens = [sum(tokens.get(d, 0) for d in q.scope) for q in dataset.questions]
    median_chunks, median_tokens = statistics.median(own_chunks), statistics.median(own_tokens)
    pool = {d for q in dataset.questions for d in q.scope}
    saturates = median_chunks <= SATURATING_CHUNKS or median_tokens <= SATURATING_BUDGETS * budget
    # pooling changes nothing when every question already searches the same documents
    shared = all(set(q.scope) == pool for q in dataset.questions)
    scope = POOLED_SCOPE if saturates and not shared else DOCUMENT_SCOPE
    return ScopeChoice(scope, median_chunks, median_tokens, budget, len(pool), saturates)
