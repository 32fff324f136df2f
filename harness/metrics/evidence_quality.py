"""How well a dataset's gold evidence strings can be scored: ambiguous and too-short evidence, counted.

The evidence metrics match word 5-grams (docs/design.md, Evidence metrics), so an evidence string of fewer
than five words gives no 5-gram to match, and a string found verbatim in several documents gives credit to
any chunk of any of them. Neither is an error (the metrics stay defined), but a study whose gold is mostly
either cannot tell arms apart; `harness init` counts both and names the first few.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from harness.data.common import LoadedDataset
from harness.metrics.ngrams import N
from harness.tokens import words

SHOWN = 5  # examples named per kind


@dataclass(frozen=True)
class EvidenceFlag:
    qid: str
    text: str
    detail: int  # documents holding the string (ambiguous), or its words (short)


@dataclass(frozen=True)
class EvidenceQuality:
    strings: int  # distinct (question, evidence string) pairs checked
    ambiguous: tuple[EvidenceFlag, ...]  # found verbatim in two or more documents
    short: tuple[EvidenceFlag, ...]  # fewer than N words

    def lines(self) -> list[str]:
        """What `harness init` prints: a count per kind, then the first few of each, in question order."""
        out = []
        for flags, what, unit in ((self.ambiguous, "found verbatim in several documents (any of them gives "
                                   "credit)", "documents"),
                                  (self.short, f"shorter than {N} words (no {N}-gram to match)", "words")):
            if not flags:
                continue
            out.append(f"evidence strings {what}: {len(flags)} of {self.strings}")
            for f in flags[:SHOWN]:
                text = f.text if len(f.text) <= 60 else f.text[:57] + "..."
                out.append(f"  {f.qid}: {text!r} ({f.detail} {unit})")
            if len(flags) > SHOWN:
                out.append(f"  ... and {len(flags) - SHOWN} more")
        return out


def evidence_quality(dataset: LoadedDataset) -> EvidenceQuality:
    """Every question's evidence strings checked against every document of the dataset."""
    texts = {d.doc_id: d.text for d in dataset.documents}
    gram_docs: dict[tuple[str, ...], set[str]] = defaultdict(set)
    for doc_id, text in texts.items():
        w = words(text)
        for gram in zip(*(w[i:] for i in range(N))):
            gram_docs[gram].add(doc_id)
    pairs = sorted({(q.qid, e.text) for q in dataset.questions for e in q.evidence if e.text.strip()})
    ambiguous, short = [], []
    holders: dict[str, int] = {}
    for qid, text in pairs:
        w = words(text)
        if len(w) < N:
            short.append(EvidenceFlag(qid, text, len(w)))
            continue
        if text not in holders:
            # a verbatim copy holds the string's 5-grams (its first and last words may be cut mid-word)
            candidates = set().union(*(gram_docs.get(g, set()) for g in zip(*(w[i:] for i in range(N)))))
            holders[text] = sum(1 for doc_id in candidates if text in texts[doc_id])
        if holders[text] > 1:
            ambiguous.append(EvidenceFlag(qid, text, holders[text]))
    return EvidenceQuality(len(pairs), tuple(ambiguous), tuple(short))
