"""The twin's words: a seeded synthetic vocabulary with Zipf-like frequencies, and the sentences, paragraphs
and
Markdown blocks made from it.

Every text belongs to topics (a document's, a section's): a topic is a few dozen mid-frequency words drawn far
more often inside it than elsewhere. A question made mostly from its evidence's words therefore ranks that
evidence above chance under BM25 or hashed n-gram vectors, and, with some of its words taken from elsewhere in
the document, not always first. All randomness comes from the numpy Generator passed in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# English function words head the ranking, as in any real text (BM25 and stop lists should see them)
FUNCTION_WORDS = (
    "the",
    "of",
    "and",
    "to",
    "a",
    "in",
    "is",
    "for",
    "that",
    "on",
    "with",
    "as",
    "by",
    "we",
    "are",
    "this",
    "from",
    "be",
    "it",
    "an",
    "at",
    "or",
    "which",
    "can",
    "not",
    "each",
    "when",
    "its",
)
# invented words are built from common English morphemes, so the cl100k tokenizer splits them nearly as
# finely as real text (3.7 characters per token, Qasper's 4.5; words of random syllables gave 2.8, which
# inflated every token count, price and context length of the rehearsal by 60%)
_PREFIXES = ("con", "pro", "re", "in", "de", "com", "trans", "pre", "sub", "inter", "dis", "en", "ex", "per",
             "over", "under", "out", "multi", "counter", "post")
_ROOTS = (
    "struct",
    "form",
    "port",
    "duct",
    "mit",
    "spect",
    "vert",
    "press",
    "tract",
    "graph",
    "log",
    "meter",
    "stack",
    "bind",
    "mark",
    "lock",
    "scale",
    "frame",
    "path",
    "load",
    "shift",
    "gate",
    "track",
    "block",
    "sort",
    "field",
    "range",
    "weight",
    "drift",
    "sample",
    "model",
    "layer",
    "point",
    "cast",
    "hold",
    "flow",
    "link",
    "grant",
    "test",
    "grade",
    "quest",
    "serve",
    "tend",
    "vent",
    "fer",
    "pose",
    "sign",
    "cede",
    "dict",
    "fact",
    "gress",
    "ject",
    "lect",
    "mand",
    "mod",
    "pend",
    "plic",
    "solve",
    "tain",
    "vis",
    "voc",
    "clin",
    "cord",
    "cur",
    "fix",
    "gen",
    "jud",
    "lat",
    "min",
    "nat",
    "pact",
    "pel",
    "ple",
    "quir",
    "rupt",
    "sect",
    "sens",
    "sist",
    "tect",
    "tort",
    "val",
    "vol",
)
_SUFFIXES = (
    "",
    "",
    "tion",
    "ment",
    "ing",
    "er",
    "al",
    "ive",
    "ity",
    "ous",
    "ize",
    "able",
    "ed",
    "s",
    "ly",
    "ure",
    "ance",
    "ist",
    "ic",
    "or",
)
VOCABULARY_SIZE = 12_000
ZIPF_EXPONENT = 1.07
ZIPF_OFFSET = 2.7  # Mandelbrot's shift: the head is flatter than a pure power law
FUNCTION_SHARE = 0.38  # of running words
TOPIC_WORDS = 30
TOPIC_RANKS = (150, 6_000)  # topic words come from the middle of the ranking: neither stop words nor hapaxes
CODE_LINE_CHARS = 34  # a simulated code line, newline included (measured)
AVERAGE_WORD_CHARS = 7.4  # with its space, over the mixture drawn (measured)


@dataclass(frozen=True)
class Topic:
    ids: np.ndarray  # indices into the lexicon's words

    @property
    def first(self) -> int:
        return int(self.ids[0])


class Lexicon:
    """A vocabulary and the draws over it; one per generated dataset, from that dataset's generator."""

    def __init__(self, rng: np.random.Generator, size: int = VOCABULARY_SIZE):
        self.rng = rng
        self.words = _invent_words(rng, size)
        self._array = np.array(self.words, dtype=object)
        self._index = {w: i for i, w in enumerate(self.words)}
        weights = 1.0 / (np.arange(size) + ZIPF_OFFSET) ** ZIPF_EXPONENT
        self._cdf = np.cumsum(weights / weights.sum())

    def topic(self, n: int = TOPIC_WORDS) -> Topic:
        lo, hi = TOPIC_RANKS
        return Topic(lo + self.rng.choice(min(hi, len(self.words)) - lo, size=n, replace=False))

    def topic_of(self, words: list[str]) -> Topic:
        """The topic made of these words (they must be the lexicon's)."""
        ids = [self._index[w] for w in words if w in self._index]
        return Topic(np.array(ids or [len(FUNCTION_WORDS)], dtype=np.int64))

    def word(self, topic: Topic, k: int = 0) -> str:
        return self.words[int(topic.ids[k % len(topic.ids)])]

    def draw(self, n: int, topics: tuple[Topic, ...] = (), topic_share: float = 0.3) -> list[str]:
        """n running words: function words, words of the given topics (the share given), else the Zipf
        vocabulary."""
        u = self.rng.random(n)
        ids = np.minimum(np.searchsorted(self._cdf, self.rng.random(n), side="right"), len(self.words) - 1)
        pick = self.rng.random(n)
        function = u < FUNCTION_SHARE
        ids[function] = (pick[function] ** 2 * len(FUNCTION_WORDS)).astype(np.int64)
        if topics:
            pooled = np.concatenate([t.ids for t in topics])
            on_topic = ~function & (u < FUNCTION_SHARE + topic_share)
            ids[on_topic] = pooled[(pick[on_topic] * len(pooled)).astype(np.int64)]
        return self._array[ids].tolist()

    def sentence(self, topics: tuple[Topic, ...], n_words: int | None = None) -> str:
        n = n_words if n_words is not None else int(self.rng.integers(8, 27))
        return self._sentence(self.draw(n, topics))

    def _sentence(self, words: list[str]) -> str:
        n = len(words)
        if n > 10 and self.rng.random() < 0.4:  # a clause
            k = int(self.rng.integers(4, n - 4))
            words[k] = words[k] + ","
        if self.rng.random() < 0.15:  # a figure, as results sections have
            words.insert(
                int(self.rng.integers(1, len(words))), f"{self.rng.integers(1, 99)}.{self.rng.integers(0, 9)}"
            )
        return words[0].capitalize() + " " + " ".join(words[1:]) + "."

    def paragraph(self, topics: tuple[Topic, ...], chars: int) -> str:
        """Sentences of 8-26 words making about `chars` characters (one sentence at least), drawn at once."""
        n = max(8, round(chars / AVERAGE_WORD_CHARS))
        words = self.draw(n, topics)
        lengths = self.rng.integers(8, 27, size=n // 8 + 1)
        sentences, at = [], 0
        for k in lengths:
            if at >= n:
                break
            k = int(k) if n - at - int(k) >= 6 else n - at  # no stub sentence at the end
            sentences.append(self._sentence(words[at:at + k]))
            at += k
        return " ".join(sentences)

    def title(self, topics: tuple[Topic, ...], lo: int = 2, hi: int = 6) -> str:
        words = [
            w
            for w in self.draw(int(self.rng.integers(lo, hi + 1)) + 3, topics, 0.6)
            if w not in FUNCTION_WORDS
        ]
        words = words[:hi] or [self.words[int(self.rng.integers(100, 1000))]]
        return " ".join(w.capitalize() for w in words)

    def content_words(self, text: str, n: int) -> list[str]:
        """n words of `text` that are not function words (repeats allowed: frequent words weigh more)."""
        pool = [w.strip(".,`()'") for w in text.split()]
        pool = [w for w in pool if w.isalpha() and w.lower() not in FUNCTION_WORDS]
        if not pool:
            return []
        return [pool[int(i)].lower() for i in self.rng.integers(0, len(pool), size=n)]

    def lognormal_chars(self, median: float, sigma: float = 0.55, lo: int = 30, hi: int = 6000) -> int:
        return int(np.clip(median * np.exp(sigma * self.rng.standard_normal()), lo, hi))

    # --- Markdown blocks of documentation pages ---

    def code_block(self, topics: tuple[Topic, ...], chars: int, language: str) -> str:
        n_lines = max(1, round(chars / CODE_LINE_CHARS))
        words = self.draw(3 * n_lines, topics, 0.7)
        shapes = self.rng.integers(0, 4, size=n_lines)
        numbers = self.rng.integers(0, 100, size=n_lines)
        lines = []
        for k in range(n_lines):
            a, b, c = words[3 * k:3 * k + 3]
            lines.append(
                (
                    f"${a} = {b}('{c}');",
                    f"    {a}.{b}({c}, {numbers[k]})",
                    f"{a}_{b} = {c}.get('{a}')",
                    f"// {a} {b} {c}",
                )[shapes[k]]
            )
        return f"```{language}\n" + "\n".join(lines) + "\n```"

    def table(self, topics: tuple[Topic, ...]) -> str:
        columns = int(self.rng.integers(2, 5))
        header = [self.title(topics, 1, 2) for _ in range(columns)]
        rows = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        for _ in range(int(self.rng.integers(2, 7))):
            cells = [f"`{w}`" if k == 0 else w for k, w in enumerate(self.draw(columns, topics, 0.5))]
            rows.append("| " + " | ".join(cells) + " |")
        return "\n".join(rows)

    def bullet_list(self, topics: tuple[Topic, ...]) -> str:
        ordered = self.rng.random() < 0.3
        items = [
            self.sentence(topics, int(self.rng.integers(4, 14))) for _ in range(int(self.rng.integers(2, 7)))
        ]
        return "\n".join(f"{k + 1}. {s}" if ordered else f"- {s}" for k, s in enumerate(items))

    def note(self, topics: tuple[Topic, ...]) -> str:
        kind = ("NOTE", "WARNING")[int(self.rng.integers(0, 2))]
        return f"> [!{kind}]\n> " + self.sentence(topics)

    def doc_paragraph(self, topics: tuple[Topic, ...], chars: int) -> str:
        """A documentation paragraph: prose with an inline code name now and then."""
        text = self.paragraph(topics, chars)
        if self.rng.random() < 0.5:
            words = text.split(" ")
            k = int(self.rng.integers(1, len(words)))
            if words[k].isalpha():
                words[k] = f"`{words[k]}()`"
            text = " ".join(words)
        return text


def _invent_words(rng: np.random.Generator, size: int) -> list[str]:
    """`size` distinct words, function words first (the head of the ranking), then [prefix] root suffix
    [root] compounds in a seeded order."""
    seen = set(FUNCTION_WORDS)
    invented: list[str] = []
    while len(invented) < size - len(FUNCTION_WORDS):
        batch = 2 * (size - len(FUNCTION_WORDS) - len(invented))
        u = rng.random((batch, 2))
        parts = rng.integers(0, 1 << 30, size=(batch, 4))
        for i in range(batch):
            w = (
                (_PREFIXES[parts[i, 0] % len(_PREFIXES)] if u[i, 0] < 0.5 else "")
                + _ROOTS[parts[i, 1] % len(_ROOTS)]
                + _SUFFIXES[parts[i, 2] % len(_SUFFIXES)]
                + (_ROOTS[parts[i, 3] % len(_ROOTS)] if u[i, 1] < 0.12 else "")
            )
            if w not in seen:
                seen.add(w)
                invented.append(w)
                if len(invented) == size - len(FUNCTION_WORDS):
                    break
    return list(FUNCTION_WORDS) + invented
