"""The seeded draws of `harness select` (docs/design.md, Data model), shared by the adapters' `select`.

The draw is random.Random(seed).sample(sorted(eligible - excluded), n), recorded in draw order ("all" records
the sorted population). Exclusions are an inline list of ids or a file of one id per line (relative to the
study; `#` starts a comment).
"""

from __future__ import annotations

from typing import Callable

from harness.config.datasets import DatasetConfig
from harness.data.common import LoadedDataset
from harness.errors import HarnessError
from harness.files import sha256_file
from harness.seeded_draw import seeded_sample
from harness.study import Study


def read_exclusions(study: Study, name: str, value: str | tuple) -> dict:
    """{source, sha256 (files only), ids (sorted)} from an inline list or a file of one id per line."""
    if not isinstance(value, str):
        return {"source": "inline", "ids": sorted({str(v) for v in value})}
    path = study.resolve(value)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise HarnessError(f"dataset `{name}`: exclusion file {path} not found (selection.exclude)") from None
    ids = {line.split("#", 1)[0].strip() for line in lines}
    return {"source": value, "sha256": sha256_file(path), "ids": sorted(i for i in ids if i)}


def draw(name: str, eligible: list[str], excluded_ids: list[str], n, seed: int) -> dict:
    """The sample and everything needed to audit it."""
    eligible = sorted(set(eligible))
    excluded = sorted(set(eligible) & set(excluded_ids))
    excluded_set = set(excluded)
    population = [e for e in eligible if e not in excluded_set]
    if n == "all":
        selected = population
    else:
        if n > len(population):
            raise HarnessError(
                f"dataset `{name}`: asked for {n} but only {len(population)} eligible ids remain "
                f"after {len(excluded)} exclusions"
            )
        selected = seeded_sample(population, n, seed)
    return {
        "n_requested": n,
        "eligible_count": len(eligible),
        "eligible": eligible,
        "excluded": excluded,
        "population_count": len(population),
        "selected": selected,
    }


def seed_and_exclusions(study: Study, name: str, cfg: DatasetConfig) -> tuple[int, dict]:
    """The `selection:` section's seed and exclusions; a dataset without the section cannot be drawn."""
    if cfg.selection is None:
        raise HarnessError(f"dataset `{name}`: a `selection:` section with `seed` is required")
    return cfg.selection.seed, read_exclusions(study, name, cfg.selection.exclude)


def select_clusters(study: Study, name: str, cfg: DatasetConfig, everything: Callable[[], LoadedDataset], *,
                    unit: str = "cluster", prefix: str = "") -> dict:
    """A seeded sample of the clusters of every eligible question (`prefix` stripped from each cluster id)."""
    seed, exclude = seed_and_exclusions(study, name, cfg)
    clusters = [q.cluster.removeprefix(prefix) for q in everything().questions]
    return {"adapter": cfg.adapter, "unit": unit, "seed": seed, "exclude": exclude} | draw(
        name, clusters, exclude["ids"], cfg.selection.n_clusters, seed)
