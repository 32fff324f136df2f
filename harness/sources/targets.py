"""What configs/study.yaml declares: one Target per file or checkout a `source:` block names."""

from __future__ import annotations

from dataclasses import dataclass

from harness.config import to_plain
from harness.config.datasets import FreshStackDataset, JsonlDataset, QasperDataset
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


def _entry_targets(name: str, cfg) -> list[Target]:
    at = f"datasets.{name}"
    if isinstance(cfg, QasperDataset) and cfg.source is not None:
        files = (cfg.files,) if isinstance(cfg.files, str) else cfg.files
        return [Target(f, "qasper", s, f"{at}.source.files[{i}]") for i, (f, s) in enumerate(zip(files, cfg.source.files))]
    if isinstance(cfg, JsonlDataset) and cfg.source is not None:
        return [Target(getattr(cfg, key), f"jsonl-{key}", getattr(cfg.source, key), f"{at}.source.{key}")
                for key in ("documents", "questions") if getattr(cfg.source, key) is not None]
    if isinstance(cfg, FreshStackDataset):
        out = []
        for domain, options in sorted(cfg.domains.items()):
            for key in ("queries", "corpus", "qrels", CHECKOUT):
                source = getattr(options.source, key) if options.source is not None else None
                if source is not None:
                    role = CHECKOUT if key == CHECKOUT else f"freshstack-{key}"
                    out.append(Target(getattr(options, key), role, source, f"{at}.domains.{domain}.source.{key}"))
        return out
    return []


def declared_targets(study: Study) -> list[Target]:
    """Every declared target, sorted by path; two entries may declare one path only with the same source."""
    found: dict[str, Target] = {}
    for name, cfg in sorted(study.config.datasets.items()):
        for target in _entry_targets(name, cfg):
            first = found.setdefault(target.path, target)
            if first is not target and (to_plain(first.source), first.role) != (to_plain(target.source), target.role):
                raise HarnessError(f"{study.config_path}: `{first.declared_at}` and `{target.declared_at}` declare "
                                   f"different sources for {target.path}")
    return [found[p] for p in sorted(found)]
