"""The plan's dialect of the config schema machinery (harness.config.fields): the same `setting` fields,
`build` and checks, with the plan's messages, which name the file and the key path:

    plan/plan.yaml: families[1].tests[0].margin: expected a number; got 'x'

A mapping's keys are checked before its values: a missing required key first, then the first unknown key
in sorted order, listing the allowed keys.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, fields
from typing import Any, Callable, Mapping

from harness.config.fields import ValueCheck, Where, build
from harness.errors import InputError


class _KeyNotGiven:
    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _KeyNotGiven()  # the default of a key that was not given, told apart from YAML null (None)


@dataclass(frozen=True)
class PlanWhere(Where):
    def child(self, key: Any) -> "PlanWhere":
        return PlanWhere(self.path, self.keys + (str(key),))

    def fail(self, message: str) -> InputError:
        return InputError(f"{self.dotted}: {message}" if self.keys else message, path=self.path)

    def expected(self, what: str, value: Any) -> InputError:
        return self.fail(f"expected {what}; got {value!r}")


def check_keys(where: Where, value: Any, required: tuple[str, ...],
               optional: tuple[str, ...] = ()) -> Mapping[Any, Any]:
    """`value` is a mapping with every required key and (when any key is named) no other."""
    if not isinstance(value, Mapping):
        raise (where if where.keys else where.child("top level")).fail(
            f"expected a mapping; got {type(value).__name__}")
    for name in required:
        if name not in value:
            raise where.child(name).fail("required key is missing")
    if required or optional:
        unknown = sorted(set(map(str, value)) - set(required) - set(optional))
        if unknown:
            raise where.child(unknown[0]).fail(f"unknown key (allowed: {', '.join((*required, *optional))})")
    return value


@dataclass(frozen=True)
class Part(ValueCheck):
    """A mapping built as the section `cls`; its fields declared with `setting` (no default: required)."""

    cls: type

    def __call__(self, value: Any, where: Where) -> Any:
        required = tuple(f.name for f in fields(self.cls) if f.metadata["required"])
        optional = tuple(f.name for f in fields(self.cls) if not f.metadata["required"])
        return build(self.cls, check_keys(where, value, required, optional), where)


@dataclass(frozen=True)
class Name(ValueCheck):
    """A string with something besides white space."""

    expected = "a non-empty string"

    def __call__(self, value: Any, where: Where) -> Any:
        if not isinstance(value, str) or not value.strip():
            raise where.expected(self.expected, value)
        return value


@dataclass(frozen=True)
class Choice(ValueCheck):
    """One of `options`, or (`options` a callable) of what it returns when checked: a registry read late."""

    options: tuple[str, ...] | Callable[[], tuple[str, ...]]

    def __call__(self, value: Any, where: Where) -> Any:
        options = self.options() if callable(self.options) else self.options
        if value not in options:
            raise where.expected(f"one of {', '.join(options)}", value)
        return value


@dataclass(frozen=True)
class Timestamp(ValueCheck):
    """An ISO 8601 date-time with a time zone, kept as written (YAML's own datetimes in ISO form)."""

    expected = "an ISO 8601 date-time with a time zone"

    def __call__(self, value: Any, where: Where) -> Any:
        if isinstance(value, dt.datetime):  # YAML parses unquoted timestamps itself
            return value.isoformat()
        if isinstance(value, str):
            try:
                parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                parsed = None
            if parsed is not None and parsed.tzinfo is not None:
                return value
        raise where.expected(self.expected, value)


def _sequence(value: Any, where: Where, non_empty: bool) -> list[Any]:
    if not isinstance(value, list) or (non_empty and not value):
        raise where.fail("expected a non-empty list")
    return value


@dataclass(frozen=True)
class Items(ValueCheck):
    """A list, each item checked by `item`, kept as a tuple."""

    item: ValueCheck
    non_empty: bool = False

    def __call__(self, value: Any, where: Where) -> Any:
        return tuple(self.item(v, where.child(f"[{i}]"))
                     for i, v in enumerate(_sequence(value, where, self.non_empty)))


@dataclass(frozen=True)
class Names(ValueCheck):
    """A list of names, each checked by `item`, none listed twice (it may be empty)."""

    item: ValueCheck = Name()

    def __call__(self, value: Any, where: Where) -> Any:
        names = Items(self.item)(value, where)
        for i, name in enumerate(names):
            if name in names[:i]:
                raise where.child(f"[{i}]").fail(f"{name!r} is listed twice")
        return names


@dataclass(frozen=True)
class NameMap(ValueCheck):
    """A mapping of names, each checked by `name`, to values checked by `item`."""

    item: ValueCheck
    name: ValueCheck = Name()

    def __call__(self, value: Any, where: Where) -> Any:
        return {self.name(name, where.child(name)): self.item(v, where.child(name))
                for name, v in check_keys(where, value, ()).items()}
