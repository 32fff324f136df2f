"""Every model-output cache the repository ships holds one entry per key (a duplicate would make the answer
served depend on which copy a loader keeps)."""

from __future__ import annotations

import collections
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def shipped(pattern: str) -> list[Path]:
    """Tracked files matching a git pathspec glob (what a clone receives, not what a local run added)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--", pattern], cwd=ROOT, capture_output=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the shipped files cannot be told from local outputs")
    return [ROOT / p for p in out.stdout.decode().split("\0") if p]


def duplicates(keys) -> dict[str, int]:
    return {k: n for k, n in collections.Counter(keys).items() if n > 1}


def test_the_checkout_ships_generation_and_vector_caches():
    assert shipped("*results/generations/*.jsonl")
    assert shipped("*results/embeddings/*/*.npz")


def test_every_shipped_generation_cache_has_one_line_per_key():
    for path in shipped("*results/generations/*.jsonl"):
        keys = [
            json.loads(line)["key"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
        ]
        assert keys and not duplicates(keys), f"{path.relative_to(ROOT)}: duplicate keys {duplicates(keys)}"


def test_every_shipped_vector_cache_has_one_vector_per_key():
    namespaces = collections.defaultdict(list)
    for shard in shipped("*results/embeddings/*/*.npz"):
        namespaces[shard.parent].append(shard)
    for directory, shards in namespaces.items():
        keys = []
        for shard in shards:
            with np.load(shard, allow_pickle=False) as z:
                keys += z["keys"].tolist()
        assert keys and not duplicates(keys), (
            f"{directory.relative_to(ROOT)}: duplicate keys {duplicates(keys)}"
        )
