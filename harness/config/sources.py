"""`source:` where a dataset's input files come from, so `harness fetch` can get them (harness.sources).

One source is exactly one of:
  huggingface: {id, config, split, revision, rows}  rows of a hub dataset (or a local folder in the hub's
  layout),
                                                    written in the adapter's own file format
  url: {href, sha256, member}                       a plain file, or `member` of a .tar(.gz) / .zip archive
  git: {repository, commit}                         a documentation checkout at exactly that commit

A `revision` left out is pinned on first fetch: the commit the hub resolves then is kept in data/SOURCES.lock
and every later fetch uses it until `harness fetch --update`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields

from harness.config.fields import Either, Int, ListOf, Optional, Nested, Text, Where, setting

SHA256 = re.compile(r"^[0-9a-f]{64}$")
COMMIT = re.compile(r"^[0-9a-f]{7,40}$")


@dataclass(frozen=True)
class HubSource:
    id: str = setting(check=Text(non_empty=True))  # a hub id, or a local folder in the hub's layout
    config: str | None = setting(None, Optional(Text(non_empty=True)))
    split: str = setting(check=Text(non_empty=True))
    revision: str | None = setting(None, Optional(Text(non_empty=True)))  # None: pinned on first fetch
    rows: int | None = setting(None, Optional(Int(0)))  # the row count the split must have


@dataclass(frozen=True)
class UrlSource:
    href: str = setting(check=Text(non_empty=True))
    sha256: str = setting(check=Text(non_empty=True))  # of the downloaded bytes (the archive, for `member`)
    member: str | None = setting(None, Optional(Text(non_empty=True)))

    def completed(self, where: Where) -> "UrlSource":
        if not SHA256.match(self.sha256):
            raise where.child("sha256").expected("64 lowercase hex digits", self.sha256)
        return self


@dataclass(frozen=True)
class GitSource:
    repository: str = setting(check=Text(non_empty=True))
    commit: str | int = setting(check=Either((Text(non_empty=True), Int(0))))  # YAML reads 12345678 as an int

    def completed(self, where: Where) -> "GitSource":
        if not COMMIT.match(str(self.commit)):
            raise where.child("commit").expected("a commit hash (7 to 40 lowercase hex digits)", self.commit)
        return self


@dataclass(frozen=True)
class Source:
    huggingface: HubSource | None = setting(None, Optional(Nested(HubSource)))
    url: UrlSource | None = setting(None, Optional(Nested(UrlSource)))
    git: GitSource | None = setting(None, Optional(Nested(GitSource)))

    @property
    def kind(self) -> str:
        return next(f.name for f in fields(self) if getattr(self, f.name) is not None)

    @property
    def spec(self) -> HubSource | UrlSource | GitSource:
        return getattr(self, self.kind)

    def completed(self, where: Where) -> "Source":
        given = [f.name for f in fields(self) if getattr(self, f.name) is not None]
        if len(given) != 1:
            raise where.fail(
                f"must give exactly one of huggingface, url, git (got {', '.join(given) or 'none'})"
            )
        return self


SOURCE = Nested(Source)
FOLDER_KINDS = ("git",)  # what a checkout (a folder) may come from
ROWS_KINDS = ("huggingface",)  # sources of rows, written as the adapter's JSON or JSON lines


def check_kinds(
    sources: object, where: Where, *, folders: tuple[str, ...] = (), text_only: tuple[str, ...] = ()
) -> None:
    """A folder key (`checkout`) takes only a git source, a file key never does; a key whose file is not
    JSON (`qrels`) takes no hub rows."""
    for f in fields(sources):
        value = getattr(sources, f.name)
        for i, source in enumerate(value if isinstance(value, tuple) else (value,)):
            if source is None:
                continue
            at = where.child(f.name).child(f"[{i}]") if isinstance(value, tuple) else where.child(f.name)
            folder = f.name in folders
            if (source.kind in FOLDER_KINDS) != folder:
                wanted = (
                    "a git source (a checkout is a folder)"
                    if folder
                    else "a huggingface or url source (a file)"
                )
                raise at.fail(f"must be {wanted}, got `{source.kind}`")
            if f.name in text_only and source.kind in ROWS_KINDS:
                raise at.fail("is a text file: give a url source, hub rows have no format for it")


@dataclass(frozen=True)
class QasperSources:
    files: tuple[Source, ...] = setting(check=ListOf(SOURCE, min_len=1))  # files[i] comes from files[i]

    def completed(self, where: Where) -> "QasperSources":
        check_kinds(self, where)
        return self


@dataclass(frozen=True)
class JsonlSources:
    documents: Source | None = setting(None, Optional(SOURCE))
    questions: Source | None = setting(None, Optional(SOURCE))

    def completed(self, where: Where) -> "JsonlSources":
        check_kinds(self, where)
        return self


@dataclass(frozen=True)
class FreshStackSources:
    queries: Source | None = setting(None, Optional(SOURCE))
    corpus: Source | None = setting(None, Optional(SOURCE))
    qrels: Source | None = setting(None, Optional(SOURCE))
    checkout: Source | None = setting(None, Optional(SOURCE))

    def completed(self, where: Where) -> "FreshStackSources":
        check_kinds(self, where, folders=("checkout",), text_only=("qrels",))
        return self


def check_targets(entry: object, sources: object, where: Where) -> None:
    """Every source names a key the entry sets (a path to write), and a list of sources matches its list."""
    for f in fields(sources):
        given = getattr(sources, f.name)
        if given is None:
            continue
        target = getattr(entry, f.name)
        at = where.child("source").child(f.name)
        if target is None:
            raise at.fail(f"is given, but the entry sets no `{f.name}` for it to write")
        if isinstance(given, tuple):
            targets = (target,) if isinstance(target, str) else target
            if len(targets) != len(given):
                raise at.fail(
                    f"must list one source per entry of `{f.name}` ({len(targets)}), got {len(given)}"
                )
