"""The twin's words: a seeded synthetic vocabulary with Zipf-like frequencies, and the sentences, paragraphs and
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
FUNCTION_WORDS = ("the", "of", "and", "to", "a", "in", "is", "for", "that", "on", "with", "as", "by", "we", "are",
                  "this", "from", "be", "it", "an", "at", "or", "which", "can", "not", "each", "when", "its")
_ONSETS = ("b", "c", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "cr", "dr", "gl",
           "pl", "st", "tr", "sh", "ch", "th", "qu", "sp", "gr")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ea", "ou", "io", "y")
_CODAS = ("", "", "", "n", "r", "s", "l", "t", "x", "m", "nd", "st", "rk")
VOCABULARY_SIZE = 12_000
ZIPF_EXPONENT = 1.07
ZIPF_OFFSET = 2.7  # Mandelbrot's shift: the head is flatter than a pure power law
FUNCTION_SHARE = 0.38  # of running words
TOPIC_WORDS = 30
TOPIC_RANKS = (150, 6_000)  # topic words come from the middle of the ranking: neither stop words nor hapaxes
CODE_LINE_CHARS = 33  # a simulated code line, newline included (measured)
AVERAGE_WORD_CHARS = 6.8  # with its space, over the mixture drawn (measured)


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
            words.insert(int(self.rng.integers(1, len(words))), f"{self.rng.integers(1, 99)}.{self.rng.integers(0, 9)}")
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
        words = [w for w in self.draw(int(self.rng.integers(lo, hi + 1)) + 3, topics, 0.6) if w not in FUNCTION_WORDS]
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
            lines.append((f"${a} = {b}('{c}');", f"    {a}.{b}({c}, {numbers[k]})", f"{a}_{b} = {c}.get('{a}')",
                          f"// {a} {b} {c}")[shapes[k]])
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
        items = [self.sentence(topics, int(self.rng.integers(4, 14))) for _ in range(int(self.rng.integers(2, 7)))]
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
    """`size` distinct pronounceable words, function words first (the head of the ranking)."""
    seen = set(FUNCTION_WORDS)
    words = list(FUNCTION_WORDS)
    while len(words) < size:
        batch = 4 * (size - len(words))
        syllables = rng.integers(1, 4, size=batch)
        onsets = rng.integers(0, len(_ONSETS), size=(batch, 3))
        vowels = rng.integers(0, len(_VOWELS), size=(batch, 3))
        codas = rng.integers(0, len(_CODAS), size=(batch, 3))
        for i in range(batch):
            w = "".join(_ONSETS[onsets[i, s]] + _VOWELS[vowels[i, s]] + _CODAS[codas[i, s]]
                        for s in range(syllables[i]))
            if len(w) > 2 and w not in seen:
                seen.add(w)
                words.append(w)
                if len(words) == size:
                    break
    return words
