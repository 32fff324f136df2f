"""Simulated Qasper papers in the original Qasper schema (harness.data.qasper reads them): title, abstract,
full_text sections (" ::: " nests them), paragraphs, figures_and_tables, and qas with one answer object per
annotator (extractive spans, free form, yes/no or unanswerable) whose evidence strings are paragraphs of the
paper.

The kept questions and their evidence paragraphs are exact counts (the paper's 951 and 2,245 at paper scale),
shaped like the paper's sample: annotators per question 1-5 in the shares 80 / 601 / 233 / 33 / 4 of 951,
evidence paragraphs per question 1 / 2 / 3 / 4+ in the shares 432 / 269 / 100 / 150. Around them, as in the
real
files: questions every annotator marked unanswerable, questions whose only evidence is a figure or table
("FLOAT SELECTED", which the adapter drops), papers with no usable question at all, and a few evidence strings
that differ from their paragraph in whitespace only (located after normalising, as 14 of the 2,245 were).
Annotation types are drawn in Qasper's shares (about 52% extractive, 24% free form, 14% yes/no, 10%
unanswerable).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from harness.errors import HarnessError
from harness.rehearsal.twin_text import Lexicon, Topic

ANNOTATOR_SHARES = (80, 601, 233, 33, 4)  # questions with 1..5 annotators, of 951
EVIDENCE_SHARES = (432, 269, 100, 150)  # questions with 1, 2, 3 and 4+ evidence paragraphs, of 951
ANSWER_TYPES = ("extractive", "abstractive", "yes-no", "unanswerable")
ANSWER_TYPE_SHARES = (0.52, 0.24, 0.14, 0.10)
UNANSWERABLE_EXTRA = 0.10  # questions dropped as unanswerable, per kept question
FLOAT_ONLY_EXTRA = 0.03  # questions whose only evidence is a figure or table, per kept question
FLOAT_EVIDENCE = 0.12  # share of answers that also cite a figure or table
WHITESPACE_VARIANTS = 14 / 2245  # evidence strings located only after collapsing whitespace
INELIGIBLE_PAPERS = 13 / 654  # papers with no question that has text evidence
TOP_SECTIONS = ("Introduction", "Related Work", "Method", "Experiments", "Results", "Discussion", "Analysis",
                "Conclusion")
SEPARATOR = " ::: "
UNDIVIDED = ("Introduction", "Conclusion", "Acknowledgments")  # sections without subsections
QUERY_WORDS_ELSEWHERE = 0.4  # a question's words taken from other paragraphs than its evidence


@dataclass(frozen=True)
class PaperPlan:
    """What one paper must hold: its id, its kept questions' evidence counts and annotator counts, and the
    dropped questions around them."""

    paper_id: str
    evidence: tuple[int, ...]  # per kept question: evidence paragraphs
    annotators: tuple[int, ...]  # per kept question
    unanswerable: int = 0
    float_only: int = 0


def shares_to_counts(total: int, shares) -> list[int]:
    """`total` split in proportion to `shares` (largest remainders), summing to `total` exactly."""
    shares = np.asarray(shares, dtype=float)
    raw = total * shares / shares.sum()
    counts = np.floor(raw).astype(int)
    for i in np.argsort(-(raw - counts), kind="stable")[: total - counts.sum()]:
        counts[i] += 1
    return [int(c) for c in counts]


def evidence_counts(rng: np.random.Generator, questions: int, evidence: int) -> list[int]:
    """Evidence paragraphs per kept question, in the paper's shape, summing to `evidence` exactly."""
    ones, twos, threes, more = shares_to_counts(questions, EVIDENCE_SHARES)
    rest = evidence - ones - 2 * twos - 3 * threes
    if rest < 4 * more or (more == 0 and rest != 0):
        raise HarnessError(
            f"twin data: {evidence} evidence paragraphs cannot be spread over {questions} questions "
            "in the paper's shape"
        )
    fours = [4 + int(x) for x in rng.multinomial(rest - 4 * more, [1 / more] * more)] if more else []
    counts = [1] * ones + [2] * twos + [3] * threes + fours
    rng.shuffle(counts)
    return counts


def plan_papers(
    rng: np.random.Generator, paper_ids: list[str], questions: int, evidence: int
) -> list[PaperPlan]:
    """Kept questions spread over the papers (each gets one at least), with the dropped ones around them."""
    n = len(paper_ids)
    if questions < n:
        raise HarnessError(f"twin data: {questions} questions cannot give each of {n} papers one")
    per_paper = 1 + rng.multinomial(questions - n, [1 / n] * n)
    ev = evidence_counts(rng, questions, evidence)
    annotators = [
        k + 1 for k, c in enumerate(shares_to_counts(questions, ANNOTATOR_SHARES)) for _ in range(c)
    ]
    rng.shuffle(annotators)
    unanswerable = rng.multinomial(round(UNANSWERABLE_EXTRA * questions), [1 / n] * n)
    float_only = rng.multinomial(round(FLOAT_ONLY_EXTRA * questions), [1 / n] * n)
    plans, at = [], 0
    for i, pid in enumerate(paper_ids):
        k = int(per_paper[i])
        plans.append(PaperPlan(pid, tuple(ev[at:at + k]), tuple(annotators[at:at + k]), int(unanswerable[i]),
                               int(float_only[i])))
        at += k
    return plans


def paper_ids(rng: np.random.Generator, n: int, taken: set[str]) -> list[str]:
    """n new arXiv-style ids (YYMM.NNNNN), none in `taken`."""
    out: list[str] = []
    seen = set(taken)
    while len(out) < n:
        pid = f"{rng.integers(15, 21)}{rng.integers(1, 13):02d}.{rng.integers(0, 100000):05d}"
        if pid not in seen:
            seen.add(pid)
            out.append(pid)
    return out


class PaperWriter:
    """Builds paper records (original Qasper schema) from plans."""

    def __init__(self, lexicon: Lexicon, *, short: bool = False):
        self.lex = lexicon
        self.rng = lexicon.rng
        self.short = short  # a small twin's papers: fewer sections and subsections (a few chunks each)

    def record(self, plan: PaperPlan) -> dict:
        topic = self.lex.topic()
        sections = self._sections(topic)
        paragraphs = [(si, pi) for si, s in enumerate(sections) for pi in range(len(s["paragraphs"]))]
        while self.short and len(paragraphs) < max(
            plan.evidence, default=0
        ):  # a short paper still holds its evidence
            sections += self._sections(topic)[2:]
            paragraphs = [(si, pi) for si, s in enumerate(sections) for pi in range(len(s["paragraphs"]))]
        figures = [
            {
                "caption": f"{('Table', 'Figure')[k % 2]} {k // 2 + 1}: {self.lex.sentence((topic,), 10)}",
                "file": f"{k + 1}-{self.lex.words[int(self.rng.integers(100, 5000))]}.png",
            }
            for k in range(int(self.rng.integers(1, 5)))
        ]
        qas = []
        for q, (m, k) in enumerate(zip(plan.evidence, plan.annotators)):
            chosen = self._evidence_paragraphs(paragraphs, m)
            texts = [sections[si]["paragraphs"][pi] for si, pi in chosen]
            qas.append(self._question(plan.paper_id, len(qas), topic, sections, texts, k, figures))
        for _ in range(plan.unanswerable):
            qas.append(self._dropped(plan.paper_id, len(qas), topic, sections, figures, float_only=False))
        for _ in range(plan.float_only):
            qas.append(self._dropped(plan.paper_id, len(qas), topic, sections, figures, float_only=True))
        order = self.rng.permutation(len(qas))  # kept and dropped questions interleave, as in the files
        return {
            "title": self.lex.title((topic,), 5, 11),
            "abstract": self.lex.paragraph((topic,), self.lex.lognormal_chars(950, 0.25, 400, 1800)),
            "full_text": sections,
            "qas": [qas[int(i)] for i in order],
            "figures_and_tables": figures,
        }

    def ineligible(self, paper_id: str) -> dict:
        """A paper none of whose questions has text evidence (the adapter drops it; select cannot draw it)."""
        unanswerable = int(self.rng.integers(1, 3))
        plan = PaperPlan(paper_id, (), (), unanswerable=unanswerable, float_only=int(self.rng.integers(0, 2)))
        return self.record(plan)

    def _sections(self, topic: Topic) -> list[dict]:
        """Top-level sections with subsections (names joined by " ::: "), paragraph lengths around Qasper's
        (median ~450 characters, a few over tau_max), and short sections under tau_min."""
        extra = (1, 2) if self.short else (2, 5)
        names = list(TOP_SECTIONS[:2]) + [
            self.lex.title((topic,), 1, 3) for _ in range(int(self.rng.integers(*extra)))
        ]
        names += ["Conclusion"] + (["Acknowledgments"] if self.rng.random() < 0.5 else [])
        sections = []
        for name in names:
            sub_topic = (topic, self.lex.topic(12))
            children = int(self.rng.poisson(0.7 if self.short else 2.2)) if name not in UNDIVIDED else 0
            header_only = (
                bool(children) and self.rng.random() < 0.3
            )  # a parent section with no text of its own
            paragraphs = self._paragraphs(sub_topic, 0 if header_only else None)
            sections.append({"section_name": name, "paragraphs": paragraphs})
            for _ in range(children):
                child = name + SEPARATOR + self.lex.title(sub_topic, 1, 4)
                sections.append(
                    {"section_name": child, "paragraphs": self._paragraphs((topic, self.lex.topic(12)))}
                )
                if self.rng.random() < 0.2:
                    grandchild = child + SEPARATOR + self.lex.title(sub_topic, 1, 3)
                    paragraphs = self._paragraphs((topic, self.lex.topic(12)))
                    sections.append({"section_name": grandchild, "paragraphs": paragraphs})
        return sections

    def _paragraphs(self, topics: tuple[Topic, ...], n: int | None = None) -> list[str]:
        if n == 0:
            return []
        if n is None:
            n = 1 + int(self.rng.poisson(1.8))
        if self.rng.random() < 0.08:  # a section shorter than tau_min
            return [self.lex.sentence(topics, int(self.rng.integers(4, 10)))]
        out = []
        for _ in range(n):
            long = (
                self.rng.random() < 0.03
            )  # a paragraph longer than tau_max: a chunk of its own, never split
            chars = (
                self.lex.lognormal_chars(1900, 0.2, 60) if long else self.lex.lognormal_chars(430, 0.6, 60)
            )
            out.append(self.lex.paragraph(topics, chars))
        return out

    def _evidence_paragraphs(self, paragraphs: list[tuple[int, int]], m: int) -> list[tuple[int, int]]:
        """m distinct paragraphs near one another (evidence gathers in a section or two)."""
        if m > len(paragraphs):
            raise HarnessError(
                f"twin data: a paper with {len(paragraphs)} paragraphs cannot hold {m} evidence paragraphs"
            )
        anchor = int(self.rng.integers(0, len(paragraphs)))
        half = max(3, m)
        lo, hi = max(0, anchor - half), min(len(paragraphs), anchor + half + 1)
        while hi - lo < m:
            lo, hi = max(0, lo - 1), min(len(paragraphs), hi + 1)
        picks = sorted(int(i) for i in self.rng.choice(np.arange(lo, hi), size=m, replace=False))
        return [paragraphs[i] for i in picks]

    def _query(self, topic: Topic, sections: list[dict], evidence: list[str]) -> str:
        """Words of the first evidence paragraph, some swapped for words from elsewhere in the paper."""
        words = self.lex.content_words(evidence[0], int(self.rng.integers(3, 7)))
        other = [p for s in sections for p in s["paragraphs"]]
        for i in range(len(words)):
            if self.rng.random() < QUERY_WORDS_ELSEWHERE:
                swap = self.lex.content_words(other[int(self.rng.integers(0, len(other)))], 1)
                words[i] = swap[0] if swap else words[i]
        start = ("What", "How", "Which", "Why", "Does", "Do")[int(self.rng.integers(0, 6))]
        return f"{start} {' '.join(words)} {self.lex.word(topic)}?"

    def _question(
        self,
        paper_id: str,
        index: int,
        topic: Topic,
        sections: list[dict],
        evidence: list[str],
        k: int,
        figures: list[dict],
    ) -> dict:
        types = list(self.rng.choice(len(ANSWER_TYPES), size=k, p=ANSWER_TYPE_SHARES))
        if all(ANSWER_TYPES[t] == "unanswerable" for t in types):
            types[0] = int(
                self.rng.choice(3, p=np.array(ANSWER_TYPE_SHARES[:3]) / sum(ANSWER_TYPE_SHARES[:3]))
            )
        answering = [a for a, t in enumerate(types) if ANSWER_TYPES[t] != "unanswerable"]
        if self.rng.random() < WHITESPACE_VARIANTS:  # the string as an extraction tool spaced it
            evidence = [e.replace(". ", ".  ", 1) if ". " in e else e for e in evidence]
        cited: dict[int, list[str]] = {a: [] for a in answering}
        for e in evidence:  # every paragraph named by one annotator at least, often by all
            named = (
                answering
                if self.rng.random() < 0.6
                else [answering[int(self.rng.integers(0, len(answering)))]]
            )
            for a in named:
                cited[a].append(e)
        for a in answering:
            if not cited[a]:
                cited[a].append(evidence[0])
        answers = []
        for a, t in enumerate(types):
            kind = ANSWER_TYPES[t]
            strings = list(cited.get(a, []))
            if kind != "unanswerable" and self.rng.random() < FLOAT_EVIDENCE:
                strings.append(
                    "FLOAT SELECTED: " + figures[int(self.rng.integers(0, len(figures)))]["caption"]
                )
            answers.append(self._annotation(paper_id, index, a, kind, strings))
        return self._qa(paper_id, index, self._query(topic, sections, evidence), answers)

    def _dropped(self, paper_id: str, index: int, topic: Topic, sections: list[dict], figures: list[dict], *,
                 float_only: bool) -> dict:
        paragraphs = [p for s in sections for p in s["paragraphs"]]
        query = self._query(topic, sections, [paragraphs[int(self.rng.integers(0, len(paragraphs)))]])
        answers = []
        for a in range(int(self.rng.integers(1, 4))):
            if float_only:
                caption = figures[int(self.rng.integers(0, len(figures)))]["caption"]
                answers.append(
                    self._annotation(paper_id, index, a, "abstractive", ["FLOAT SELECTED: " + caption])
                )
            else:
                answers.append(self._annotation(paper_id, index, a, "unanswerable", []))
        return self._qa(paper_id, index, query, answers)

    def _annotation(self, paper_id: str, index: int, a: int, kind: str, evidence: list[str]) -> dict:
        text = next((e for e in evidence if not e.startswith("FLOAT SELECTED")), "")
        words = text.split() or self.lex.draw(6)
        start = int(self.rng.integers(0, max(1, len(words) - 6)))
        span = " ".join(words[start:start + int(self.rng.integers(2, 7))]).strip(".,")
        answer = {
            "unanswerable": kind == "unanswerable",
            "extractive_spans": [span] if kind == "extractive" else [],
            "yes_no": bool(self.rng.random() < 0.6) if kind == "yes-no" else None,
            "free_form_answer": (" ".join(self.lex.content_words(text, 6)) or span)
            if kind == "abstractive"
            else "",
            "evidence": evidence,
            "highlighted_evidence": [e.split(". ")[0] for e in evidence],
        }
        return {"answer": answer, "annotation_id": _hex(paper_id, index, a, "annotation"),
                "worker_id": _hex(paper_id, index, a, "worker")}

    def _qa(self, paper_id: str, index: int, question: str, answers: list[dict]) -> dict:
        return {"question": question, "question_id": _hex(paper_id, index, "question"),
                "nlp_background": ("zero", "two", "five", "infinity")[int(self.rng.integers(0, 4))],
                "topic_background": ("unfamiliar", "familiar", "research")[int(self.rng.integers(0, 3))],
                "paper_read": ("no", "yes", "")[int(self.rng.integers(0, 3))], "search_query": "",
                "question_writer": _hex(paper_id, index, "writer"), "answers": answers}


def _hex(*parts) -> str:
    """A 40-hex id like Qasper's, fixed by what it names."""
    return hashlib.sha1("/".join(str(p) for p in parts).encode()).hexdigest()
