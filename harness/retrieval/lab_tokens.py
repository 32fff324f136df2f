"""The lab's BM25 tokeniser option (docs/chunking-lab.md): stop-word removal and a light suffix stemmer.

Words are the harness's lowercase [a-z0-9]+ words; stop words are dropped; a word longer than four
characters loses the first of -ing, -es, -ed, -s it ends with ("applies" -> "appli", "coming" -> "com").
"""

from __future__ import annotations

from harness.tokens import words

SUFFIXES = ("ing", "es", "ed", "s")
STOP_WORDS = frozenset(
    """a about above after again all am an and any are as at be been before being below between both but by
    can could did do does doing down during each few for from further had has have having he her here hers
    him his how i if in into is it its itself just me more most my no nor not of off on once only or other
    our ours out over own same she should so some such than that the their theirs them then there these they
    this those through to too under until up very was we were what when where which while who whom why will
    with would you your yours""".split()
)


def stem(word: str) -> str:
    if len(word) > 4:
        for suffix in SUFFIXES:
            if word.endswith(suffix):
                return word[: -len(suffix)]
    return word


def lab_tokens(text: str, *, stop_words: bool = True, stemming: bool = True) -> list[str]:
    toks = words(text)
    if stop_words:
        toks = [t for t in toks if t not in STOP_WORDS]
    return [stem(t) for t in toks] if stemming else toks
