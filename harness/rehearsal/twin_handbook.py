"""A simulated handbook for the lab's question-evidence format (harness.data.question_evidence): one Markdown
document of numbered provisions ("## 2 Title", "### 2.3 Title") whose sentences cite one another ("as set out
in Section 1.2"), and multi-fact questions whose evidence is two or three exact sentences, a rule and the
provision it cites where there is one. Sizes follow the chunking lab's write-up: one document of about 5,300
characters and 25 questions, 12 of them for training.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.rehearsal.twin_text import Lexicon

TRAINING_SHARE = 12 / 25


@dataclass(frozen=True)
class Provision:
    pid: str
    sentences: tuple[str, ...]
    cites: str | None  # the provision one of its sentences refers to


def handbook(lex: Lexicon, chapters: int = 6, per_chapter: int = 4) -> tuple[str, list[Provision]]:
    rng = lex.rng
    topic = lex.topic()
    lines = [f"# {lex.title((topic,), 2, 4)}: Staff Handbook", "", lex.paragraph((topic,), 200)]
    provisions: list[Provision] = []
    for c in range(1, chapters + 1):
        chapter_topic = (topic, lex.topic(10))
        lines += ["", f"## {c} {lex.title(chapter_topic, 1, 3)}"]
        for p in range(1, per_chapter + 1):
            sentences = [
                lex.sentence(chapter_topic, int(rng.integers(9, 20))) for _ in range(int(rng.integers(2, 4)))
            ]
            cites = None
            if provisions and rng.random() < 0.5:
                cites = provisions[int(rng.integers(0, len(provisions)))].pid
                k = int(rng.integers(0, len(sentences)))
                sentences[k] = sentences[k][:-1] + f" as set out in Section {cites}."
            pid = f"{c}.{p}"
            provisions.append(Provision(pid, tuple(sentences), cites))
            lines += ["", f"### {pid} {lex.title(chapter_topic, 1, 3)}", " ".join(sentences)]
    return "\n".join(lines) + "\n", provisions


def handbook_questions(lex: Lexicon, provisions: list[Provision], n: int) -> list[dict]:
    """{question, evidence, split} records: a rule with the provision it cites, else two sentences of one."""
    rng = lex.rng
    by_id = {p.pid: p for p in provisions}
    records = []
    for q in range(n):
        p = provisions[int(rng.integers(0, len(provisions)))]
        if p.cites is not None:
            cited = next(s for s in p.sentences if f"Section {p.cites}" in s)
            other = by_id[p.cites].sentences
            evidence = [cited, other[int(rng.integers(0, len(other)))]]
        else:
            evidence = [p.sentences[int(i)] for i in sorted(rng.choice(len(p.sentences), 2, replace=False))]
        words = lex.content_words(" ".join(evidence), int(rng.integers(4, 8)))
        records.append({"question": f"What {' '.join(words)}?", "evidence": evidence,
                        "split": "train" if q < round(TRAINING_SHARE * n) else "held-out"})
    return records
