"""Simulated documentation pages (FreshStack-like corpora and the JSONL adapter's docs) and the questions
asked
of them.

A page looks like a framework's docs page: "# Title", a list of links to its sections, "##" sections with
"###" and a few "####" subsections, and body blocks of prose (inline code names), fenced code, lists, tables
and "> [!NOTE]" blockquotes. Some sections hold one short line (under tau_min, so header-led chunking joins
them to a neighbour) and some code blocks run past tau_max (a chunk of their own). Sizes follow FreshStack's
Laravel docs, the one corpus the paper gives chunk counts for: 3,860 header-led chunks over 98 files.

A section's span runs from its header line to its last block (its subsections are sections of their own):
the unit FreshStack's gold corpus ids and the JSONL docs' gold spans name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.rehearsal.twin_text import Lexicon, Topic

SEPARATOR = "\n\n"
CODE_LANGUAGES = ("php", "shell", "js", "python", "yaml")


@dataclass(frozen=True)
class Page:
    path: str  # relative to its folder (checkout or docs), POSIX
    text: str
    sections: tuple[tuple[int, int], ...]  # [start, end) of each section, in order


@dataclass(frozen=True)
class DocQuestion:
    title: str
    body: str
    answer: str
    nuggets: tuple[str, ...]


class PageWriter:
    def __init__(self, lexicon: Lexicon):
        self.lex = lexicon
        self.rng = lexicon.rng

    def page(self, path: str, domain: Topic) -> Page:
        page_topic = (domain, self.lex.topic())
        parts: list[str] = []
        offset = 0
        sections: list[tuple[int, int]] = []
        open_start: int | None = None

        def emit(block: str) -> None:
            nonlocal offset
            if parts:
                parts.append(SEPARATOR)
                offset += len(SEPARATOR)
            parts.append(block)
            offset += len(block)

        def header(level: int, title: str) -> None:
            nonlocal open_start
            if open_start is not None:
                sections.append((open_start, offset))
            open_start = offset + (len(SEPARATOR) if parts else 0)
            emit("#" * level + " " + title)

        titles = [self.lex.title(page_topic, 1, 4) for _ in range(2 + int(self.rng.poisson(8)))]
        header(1, self.lex.title(page_topic, 1, 3))
        emit(self.lex.paragraph(page_topic, self.lex.lognormal_chars(300)))
        emit("\n".join(f"- [{t}](#{_slug(t)})" for t in titles))
        for t in titles:
            section_topic = page_topic + (self.lex.topic(10),)
            header(2, t)
            self._body(emit, section_topic)
            for _ in range(int(self.rng.poisson(2.4))):
                sub_topic = page_topic + (self.lex.topic(10),)
                header(3, self.lex.title(sub_topic, 1, 4))
                self._body(emit, sub_topic)
                if self.rng.random() < 0.12:
                    header(4, self.lex.title(sub_topic, 1, 3))
                    self._body(emit, sub_topic)
        sections.append((open_start, offset))
        return Page(path, "".join(parts) + "\n", tuple(sections))

    def _body(self, emit, topics: tuple[Topic, ...]) -> None:
        if self.rng.random() < 0.08:  # a section shorter than tau_min
            emit(self.lex.sentence(topics, int(self.rng.integers(4, 9))))
            return
        for k in range(1 + int(self.rng.poisson(1.6))):
            u = self.rng.random()
            if k == 0 or u < 0.5:
                emit(self.lex.doc_paragraph(topics, self.lex.lognormal_chars(320)))
            elif u < 0.72:
                long = self.rng.random() < 0.05  # longer than tau_max: never split
                language = CODE_LANGUAGES[int(self.rng.integers(0, len(CODE_LANGUAGES)))]
                chars = self.lex.lognormal_chars(2000, 0.2) if long else self.lex.lognormal_chars(260, 0.6)
                emit(self.lex.code_block(topics, chars, language))
            elif u < 0.84:
                emit(self.lex.bullet_list(topics))
            elif u < 0.92:
                emit(self.lex.table(topics))
            else:
                emit(self.lex.note(topics))

    def question(self, gold: list[str], domain: Topic) -> DocQuestion:
        """A Stack Overflow-like question about the gold sections' text: its words are mostly theirs, with
        the domain's words mixed in, so retrieval finds the gold more often than chance, not always."""
        words = self.lex.content_words(" ".join(gold), 24)
        asked = self.lex.topic_of(words) if words else domain
        title_words = self.lex.content_words(gold[0], int(self.rng.integers(3, 7)))
        start = ("How do I", "Why does", "How to", "What is the right way to")[int(self.rng.integers(0, 4))]
        title = f"{start} {' '.join(title_words)} in {self.lex.word(domain)}?"
        body = " ".join(self.lex.draw(int(self.rng.integers(30, 90)), (asked, domain), 0.35))
        body = body[0].upper() + body[1:] + "."
        if self.rng.random() < 0.3:
            body += "\n\n" + self.lex.code_block((asked,), self.lex.lognormal_chars(160), "php")
        answer = self.lex.sentence((asked,), int(self.rng.integers(10, 30)))
        nuggets = tuple(self.lex.sentence((asked,), int(self.rng.integers(6, 14))) for _ in range(len(gold)))
        return DocQuestion(title, body, answer, nuggets)


def page_paths(lexicon: Lexicon, n: int, *, nested: float) -> list[str]:
    """n distinct Markdown file names, a share `nested` of them one folder down."""
    rng = lexicon.rng
    folders = [lexicon.words[int(rng.integers(200, 2000))] for _ in range(4)]
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        a, b = (lexicon.words[int(i)] for i in rng.integers(100, 6000, size=2))
        name = f"{a}.md" if rng.random() < 0.6 else f"{a}-{b}.md"
        path = f"{folders[int(rng.integers(0, len(folders)))]}/{name}" if rng.random() < nested else name
        if path not in seen:
            seen.add(path)
            out.append(path)
    return out


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
