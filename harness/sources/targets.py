"""What configs/study.yaml declares: one Target per file or checkout a `source:` block names."""

from __future__ import annotations

from dataclasses import dataclass, fields

from harness.config import to_plain
from harness.config.sources import Source
from harness.errors import HarnessError
from harness.sources.formats import CHECKOUT_WHAT, FORMATS
from harness.study import Study

CHECKOUT = "checkout"
PIN_ON_FIRST_FETCH = "pinned on first fetch"


@dataclass(frozen=True)
class Target:
    path: str  # as configured: relative to the study root, or absolute
    role: str  # a key of harness.sources.formats.FORMATS, or "checkout"
    source: Source
    declared_at: str  # the dotted config key of the source

    @property
    def is_checkout(self) -> bool:
        return self.role == CHECKOUT

    @property
    def what(self) -> str:
        return CHECKOUT_WHAT if self.is_checkout else FORMATS[self.role].what

    def describe(self) -> str:
        spec = self.source.spec
        if self.source.kind == "huggingface":
            parts = [f"config {spec.config}" if spec.config else "", f"split {spec.split}",
                     f"revision {spec.revision}" if spec.revision else f"revision {PIN_ON_FIRST_FETCH}"]
            return f"huggingface {spec.id} ({', '.join(p for p in parts if p)})"
        if self.source.kind == "url":
            return f"url {spec.href}" + (f" (member {spec.member})" if spec.member else "")
        return f"git {spec.repository} at {spec.commit}"


def _sourced(entry, at: str, role_prefix: str) -> list[Target]:
    """One Target per path an entry's `source:` section fetches: its key `k` writes the entry's `k` (a list
    of sources, the list of paths). The role is "<adapter>-<key>" (harness.sources.formats), or a checkout."""
    out = []
    for f in fields(entry.source) if entry.source is not None else ():
        given = getattr(entry.source, f.name)
        paths = getattr(entry, f.name)
        if given is None:
            continue
        if isinstance(
            given, tuple
        ):  # a list of sources for a list of paths (the schema matched their lengths)
            paths = (paths,) if isinstance(paths, str) else paths
            pairs = [(p, s, f"{at}.source.{f.name}[{i}]") for i, (p, s) in enumerate(zip(paths, given))]
        else:
            pairs = [(paths, given, f"{at}.source.{f.name}")]
        out += [
            Target(p, CHECKOUT if s.kind == "git" else f"{role_prefix}-{f.name}", s, key)
            for p, s, key in pairs
        ]
    return out


def _entry_targets(name: str, cfg) -> list[Target]:
    """The entry's own sources, and its domains' (FreshStack: a `source:` per domain)."""
    at = f"datasets.{name}"
    out = _sourced(cfg, at, cfg.adapter) if hasattr(cfg, "source") else []
    for domain, options in sorted((getattr(cfg, "domains", None) or {}).items()):
        out += _sourced(options, f"{at}.domains.{domain}", cfg.adapter)
    return out


def declared_targets(study: Study) -> list[Target]:
    """Every declared target, sorted by path; two entries may declare one path only with the same source."""
    found: dict[str, Target] = {}
    for name, cfg in sorted(study.config.datasets.items()):
        for target in _entry_targets(name, cfg):
            first = found.setdefault(target.path, target)
            if first is not target and (to_plain(first.source), first.role) != (
                to_plain(target.source),
                target.role,
            ):
                raise HarnessError(
                    f"{study.config_path}: `{first.declared_at}` and `{target.declared_at}` declare "
                    f"different sources for {target.path}"
                )
    return [found[p] for p in sorted(found)]
