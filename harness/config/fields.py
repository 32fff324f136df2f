"""The machinery behind the study-config schema: value checks, `setting()` fields, and `build()`.

A section is a frozen dataclass whose fields are declared with `setting(default, check)`. `build`
turns a YAML mapping into that dataclass: an unknown key is an error with the closest valid key
(difflib), a value the check refuses is an error naming the dotted key and what was expected, and
an absent key takes the field's default, the only place that default is written.
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from harness.errors import HarnessError

REQUIRED = object()  # a `setting` without a default must be given
# no number setting is larger in size (docs/pipeline.md, "Names and numbers"): integers up to it are exact as
# floats and in JSON, and fit NumPy's; beyond it a value is a typo, or .inf
LARGEST = 2**53


@dataclass(frozen=True)
class Where:
    """A position in the config file: the file and the keys leading to a value."""

    path: Path | str | None = None
    keys: tuple[str, ...] = ()

    def child(self, key: Any) -> "Where":
        return Where(self.path, self.keys + (str(key),))

    @property
    def dotted(self) -> str:
        """chunking.tau_max, arms.E.datasets[0]"""
        return (
            "".join(k if i == 0 or k.startswith("[") else f".{k}" for i, k in enumerate(self.keys))
            or "(top level)"
        )

    def fail(self, message: str) -> HarnessError:
        prefix = f"{self.path}: " if self.path is not None else "config: "
        return HarnessError(f"{prefix}`{self.dotted}` {message}")

    def expected(self, what: str, value: Any) -> HarnessError:
        return self.fail(f"must be {what}, got {value!r}")

    def unknown(self, valid: list[str]) -> HarnessError:
        """The last key is not one of `valid`: name the closest valid key."""
        close = difflib.get_close_matches(self.keys[-1], valid, n=1, cutoff=0.5)
        hint = f" (did you mean `{close[0]}`?)" if close else ""
        return self.fail(f"is not a known key{hint}; valid keys here: {', '.join(valid)}")


# --- checks: callables (value, where) -> the value kept; each has `expected`, used in messages ---


class ValueCheck:
    expected = "a value"

    def __call__(self, value: Any, where: Where) -> Any:
        raise NotImplementedError


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _range_text(minimum: float | None, maximum: float | None, above: bool) -> str:
    parts = []
    if minimum is not None:
        parts.append(f"{'>' if above else '>='} {minimum}")
    if maximum is not None:
        parts.append(f"<= {maximum}")
    return " and ".join(parts)


@dataclass(frozen=True)
class Number(ValueCheck):
    """An int or float (YAML's 0 stays 0: values are kept exactly as written, they key caches)."""

    minimum: float | None = None
    maximum: float | None = None
    above: bool = False  # minimum is exclusive
    integer: bool = False

    @property
    def expected(self) -> str:
        kind = "an integer" if self.integer else "a number"
        bounds = _range_text(self.minimum, self.maximum, self.above)
        return f"{kind} {bounds}" if bounds else kind

    def __call__(self, value: Any, where: Where) -> Any:
        ok = _is_int(value) if self.integer else _is_number(value)
        if ok and self.minimum is not None:
            ok = value > self.minimum if self.above else value >= self.minimum
        if ok and self.maximum is not None:
            ok = value <= self.maximum
        if not ok:
            raise where.expected(self.expected, value)
        if not abs(value) <= LARGEST:  # .nan (which every comparison fails) or beyond LARGEST
            raise where.fail(f"must be a finite number of at most {LARGEST:,} in size, got {value!r}")
        return value


def Int(minimum: int | None = None, maximum: int | None = None) -> Number:
    return Number(minimum, maximum, integer=True)


@dataclass(frozen=True)
class Text(ValueCheck):
    non_empty: bool = False

    @property
    def expected(self) -> str:
        return "a non-empty string" if self.non_empty else "a string"

    def __call__(self, value: Any, where: Where) -> Any:
        if not isinstance(value, str) or (self.non_empty and not value):
            raise where.expected(self.expected, value)
        return value


@dataclass(frozen=True)
class Flag(ValueCheck):
    expected = "true or false"

    def __call__(self, value: Any, where: Where) -> Any:
        if not isinstance(value, bool):
            raise where.expected(self.expected, value)
        return value


@dataclass(frozen=True)
class OneOf(ValueCheck):
    options: tuple[Any, ...]

    @property
    def expected(self) -> str:
        return "one of " + ", ".join(repr(o) for o in self.options)

    def __call__(self, value: Any, where: Where) -> Any:
        if isinstance(value, bool) or value not in self.options:
            raise where.expected(self.expected, value)
        return value


@dataclass(frozen=True)
class Either(ValueCheck):
    """The first check that accepts the value."""

    checks: tuple[ValueCheck, ...]

    @property
    def expected(self) -> str:
        return " or ".join(c.expected for c in self.checks)

    def __call__(self, value: Any, where: Where) -> Any:
        for check in self.checks:
            try:
                return check(value, where)
            except HarnessError:
                continue
        raise where.expected(self.expected, value)


@dataclass(frozen=True)
class ListOf(ValueCheck):
    """A YAML list, kept as a tuple (sections are immutable)."""

    item: ValueCheck
    min_len: int = 0
    unique: bool = False

    @property
    def expected(self) -> str:
        size = {0: "a list", 1: "a non-empty list"}.get(
            self.min_len, f"a list of {self.min_len} or more items"
        )
        return f"{size} (each item: {self.item.expected}{', no repeats' if self.unique else ''})"

    def __call__(self, value: Any, where: Where) -> Any:
        if not isinstance(value, (list, tuple)) or len(value) < self.min_len:
            raise where.expected(self.expected, value)
        items = tuple(self.item(v, where.child(f"[{i}]")) for i, v in enumerate(value))
        if self.unique and len(set(items)) != len(items):
            raise where.expected(self.expected, value)
        return items


@dataclass(frozen=True)
class MapOf(ValueCheck):
    """A mapping of free names (arm names, model names, ...) to values; `keys` restricts the names, `name`
    checks each (harness.config.names.NAME for the names a study gives)."""

    item: ValueCheck
    keys: tuple[str, ...] | None = None
    non_empty: bool = False
    name: ValueCheck | None = None

    @property
    def expected(self) -> str:
        return f"a {'non-empty ' if self.non_empty else ''}mapping of names to {self.item.expected}"

    def __call__(self, value: Any, where: Where) -> Any:
        if not isinstance(value, Mapping) or (self.non_empty and not value):
            raise where.expected(self.expected, value)
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise where.child(key).fail("must be a string key")
            if self.keys is not None and key not in self.keys:
                raise where.child(key).unknown(list(self.keys))
            if self.name is not None:
                self.name(key, where.child(key))
            out[key] = self.item(item, where.child(key))
        return out


@dataclass(frozen=True)
class Nested(ValueCheck):
    """A nested section (a dataclass built with `build`)."""

    cls: type

    @property
    def expected(self) -> str:
        return f"a mapping ({self.cls.__name__})"

    def __call__(self, value: Any, where: Where) -> Any:
        return build(self.cls, value, where)


@dataclass(frozen=True)
class Variants(ValueCheck):
    """A section whose schema depends on one key (`kind:` of an arm, `type:` of a retriever, ...)."""

    key: str
    choose: Callable[[Mapping[str, Any]], type | None]  # the mapping -> its schema, or None if unknown
    names: tuple[str, ...]  # the values `key` may take, for messages

    @property
    def expected(self) -> str:
        return f"a mapping with `{self.key}:`"

    def __call__(self, value: Any, where: Where) -> Any:
        if not isinstance(value, Mapping):
            raise where.expected(f"a mapping with `{self.key}:` (one of {', '.join(self.names)})", value)
        cls = self.choose(value)
        if cls is None:
            given = value.get(self.key)
            if isinstance(given, str):
                close = difflib.get_close_matches(given, self.names, n=1, cutoff=0.6)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise where.child(self.key).fail(
                    f"is {given!r}, not a known value{hint}; known: {', '.join(self.names)}"
                )
            raise where.child(self.key).expected(f"one of {', '.join(self.names)}", given)
        return build(cls, value, where)


class Anything(ValueCheck):
    expected = "any value"

    def __call__(self, value: Any, where: Where) -> Any:
        return value


@dataclass(frozen=True)
class Optional(ValueCheck):
    """The check, or null (YAML `~` / an empty value): for settings that have no default."""

    check: ValueCheck

    @property
    def expected(self) -> str:
        return f"{self.check.expected} (or null)"

    def __call__(self, value: Any, where: Where) -> Any:
        return None if value is None else self.check(value, where)


# --- fields and building ---


def setting(default: Any = REQUIRED, check: ValueCheck = Anything(), *,
            factory: Callable[[], Any] | None = None):
    """A schema field: its one default (or REQUIRED) and the check its values must pass."""
    meta = {"check": check, "required": default is REQUIRED and factory is None}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=None if default is REQUIRED else default, metadata=meta)


def build(cls: type, raw: Any, where: Where) -> Any:
    """`raw` (a YAML mapping) as an instance of the section `cls`, or HarnessError."""
    if not isinstance(raw, Mapping):
        raise where.expected(f"a mapping ({cls.__name__} settings)", raw)
    known = [f.name for f in fields(cls)]
    for key in raw:
        if key not in known:
            raise where.child(key).unknown(known)
    values = {}
    for f in fields(cls):
        if f.name in raw:
            values[f.name] = f.metadata["check"](raw[f.name], where.child(f.name))
        elif f.metadata["required"]:
            raise where.child(f.name).fail(f"is required ({f.metadata['check'].expected})")
    obj = cls(**values)
    complete = getattr(obj, "completed", None)  # cross-field checks and defaults derived from other fields
    return complete(where) if complete is not None else obj


def replace(obj: Any, **changes: Any) -> Any:
    return dataclasses.replace(obj, **changes)


def to_plain(value: Any) -> Any:
    """Sections as plain JSON/YAML data: dicts in field order, tuples as lists, unset (None) settings left
    out."""
    if is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: to_plain(getattr(value, f.name))
            for f in fields(value)
            if getattr(value, f.name) is not None
        }
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    return value
