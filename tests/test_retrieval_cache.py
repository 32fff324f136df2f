"""The on-disk vector cache: reruns encode nothing seen, namespaces never mix, shards are crash-safe."""

from __future__ import annotations

import numpy as np
import pytest

from harness.errors import HarnessError
from harness.retrieval.cache import CacheNamespace, VectorCache

NS = CacheNamespace("embedding", "org/model", "sha256:abc", "search_document: ")


class Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, texts):
        self.calls.append(list(texts))
        vectors = np.array([[len(t), t.count("a"), 1.0] for t in texts], dtype=np.float32)
        return vectors, np.array([len(t) > 5 for t in texts])


def written(cache, texts, encoder=None):
    """The cache after encoding `texts` and writing them as a shard."""
    cache.encode(texts, encoder or Recorder())
    cache.flush()
    return cache


def test_rerun_encodes_nothing_it_has_seen(tmp_path):
    enc = Recorder()
    cache = VectorCache(tmp_path, NS)
    vectors, truncated = cache.encode(["aa", "banana", "aa", "c"], enc)
    assert enc.calls == [["aa", "banana", "c"]]  # duplicates encoded once
    assert (cache.hits, cache.misses) == (0, 3)
    assert vectors[:, 0].tolist() == [2, 6, 2, 1] and truncated.tolist() == [False, True, False, False]
    cache.flush()

    rerun, enc2 = VectorCache(tmp_path, NS), Recorder()
    again, flags = rerun.encode(["c", "banana", "aa", "new"], enc2)
    assert enc2.calls == [["new"]]
    assert (rerun.hits, rerun.misses) == (3, 1)
    assert again[:3].tolist() == vectors[[3, 1, 0]].tolist() and flags.tolist() == [False, True, False, False]


@pytest.mark.parametrize(
    "other",
    [
        CacheNamespace("embedding", "org/model", "sha256:abc", ""),  # another prefix
        CacheNamespace("embedding", "org/model", "sha256:def", "search_document: "),  # new weights
        CacheNamespace("embedding", "org/other", "sha256:abc", "search_document: "),
        CacheNamespace("pair-score", "org/model", "sha256:abc", "search_document: "),
    ],
)
def test_namespaces_do_not_share_entries(tmp_path, other):
    written(VectorCache(tmp_path, NS), ["aa"])
    enc = Recorder()
    VectorCache(tmp_path, other).encode(["aa"], enc)
    assert enc.calls == [["aa"]]


def test_each_flush_is_one_complete_shard_and_leftover_temp_files_are_ignored(tmp_path):
    cache = VectorCache(tmp_path, NS)
    cache.encode(["a"], Recorder())
    cache.encode(["b", "c"], Recorder())
    assert cache.flush() is not None and cache.flush() is None  # nothing held after a flush
    written(cache, ["a", "z"])
    assert len(list(cache.directory.glob("*.npz"))) == 2 and cache.shards_written == 2
    # a write killed before its rename leaves only a temporary file: the rerun recomputes that batch alone
    (cache.directory / ".deadbeef.npz.123.tmp").write_bytes(b"partial")
    enc = Recorder()
    VectorCache(tmp_path, NS).encode(["a", "b", "c", "z", "d"], enc)
    assert enc.calls == [["d"]]


def test_corrupt_shard_is_reported_with_its_path(tmp_path):
    cache = written(VectorCache(tmp_path, NS), ["a"])
    shard = next(cache.directory.glob("*.npz"))
    shard.write_bytes(b"not a zip")
    with pytest.raises(HarnessError, match=rf"{shard.name}: unreadable cache shard"):
        VectorCache(tmp_path, NS)


def test_encoder_returning_wrong_shape_is_an_error(tmp_path):
    def bad(texts):
        return np.zeros((len(texts) + 1, 3)), np.zeros(len(texts), dtype=bool)

    with pytest.raises(HarnessError, match=r"org/model: encoder returned \(3, 3\) vectors .* for 2 texts"):
        VectorCache(tmp_path, NS).encode(["a", "b"], bad)


def test_float64_scores_round_trip_exactly(tmp_path):
    ns = CacheNamespace("pair-score", "scorer", "d", "")
    value = 0.1 + 0.2  # not representable in float32
    written(
        VectorCache(tmp_path, ns, dtype=np.float64),
        ["p"],
        lambda ts: (np.array([[value]]), np.array([False])),
    )
    got, _ = VectorCache(tmp_path, ns, dtype=np.float64).encode(
        ["p"], lambda ts: pytest.fail("should be cached")
    )
    assert got[0, 0] == value


def test_empty_input(tmp_path):
    vectors, flags = VectorCache(tmp_path, NS).encode([], Recorder())
    assert vectors.shape == (0, 0) and flags.shape == (0,)


def test_vectors_outside_the_resident_budget_are_read_back_identical(tmp_path):
    # Only the index stays in memory: with room for one shard, every lookup of another shard rereads it.
    texts = [f"text {i} " + "a" * (i % 7) for i in range(40)]
    cache = VectorCache(tmp_path, NS, resident_bytes=1)
    first = []
    for i in range(0, 40, 8):  # five shards
        first.append(cache.encode(texts[i:i + 8], Recorder())[0])
        cache.flush()
    assert len(cache._resident) == 1
    order = [7, 39, 0, 12, 7, 33, 21]
    again, flags = cache.encode([texts[i] for i in order], lambda ts: pytest.fail("should be cached"))
    assert again.tolist() == [first[i // 8][i % 8].tolist() for i in order]
    assert flags.tolist() == [len(texts[i]) > 5 for i in order]
    fresh, _ = VectorCache(tmp_path, NS, resident_bytes=1).encode([texts[i] for i in order], Recorder())
    assert fresh.tobytes() == again.tobytes() and len(cache) == 40


def test_a_key_held_by_two_shards_reads_from_the_first_in_name_order(tmp_path):
    written(VectorCache(tmp_path, NS), ["a"])  # a = [1, 1, 1]
    other = tmp_path / "other"
    written(
        VectorCache(other, NS), ["a", "b"], lambda ts: (np.full((len(ts), 3), 9.0), np.zeros(len(ts), bool))
    )
    directory = VectorCache(tmp_path, NS).directory
    for shard in (other / NS.dirname).glob("*.npz"):
        shard.rename(directory / shard.name)
    first = sorted(directory.glob("*.npz"))[0]
    expected = np.load(first)["vectors"][0].tolist()
    vectors, _ = VectorCache(tmp_path, NS).encode(["a"], lambda ts: pytest.fail("should be cached"))
    assert vectors[0].tolist() == expected


def test_a_shard_whose_vectors_do_not_match_its_keys_is_reported_with_its_path(tmp_path):
    cache = written(VectorCache(tmp_path, NS), ["a", "b"])
    shard = next(cache.directory.glob("*.npz"))
    with np.load(shard) as z:
        keys, truncated = z["keys"], z["truncated"]
    np.savez(shard, keys=keys, vectors=np.zeros((1, 3), dtype=np.float32), truncated=truncated)
    with pytest.raises(HarnessError, match=rf"{shard.name}: \(1, 3\) vectors for 2 keys"):
        VectorCache(tmp_path, NS).encode(["b"], Recorder())


def test_key_index_agrees_with_a_dict_first_entry_winning():
    """KeyIndex against the dict it replaced: loaded keys, keys added before and after merges, repeats (the
    first location wins), digests that end in zero bytes or share all but their last byte."""
    from harness.retrieval.cache import KeyIndex

    rng = np.random.default_rng(3)
    pool = [bytes(rng.integers(0, 256, 32, dtype=np.uint8)) for _ in range(400)]
    pool += [p[:31] + b"\x00" for p in pool[:40]] + [
        b"\x00" * 32,
        b"\x00" * 31 + b"\x01",
        pool[0][:31] + b"\xff",
    ]
    index, reference = KeyIndex(merge_at=16), {}
    loaded = [pool[i] for i in rng.integers(0, 200, 300)]  # with repeats
    index.load(np.array(loaded, dtype="S32"), np.arange(300, dtype=np.int64))
    for location, d in enumerate(loaded):
        reference.setdefault(d, location)
    for batch in range(30):
        digests = [pool[i] for i in rng.integers(0, len(pool), 25)]
        locations = 1000 + batch * 100 + np.arange(25)
        index.add(digests, locations)
        for d, location in zip(digests, locations.tolist()):
            reference.setdefault(d, location)
        probe = pool + [bytes(rng.integers(0, 256, 32, dtype=np.uint8))]
        assert index.find(probe).tolist() == [reference.get(d, -1) for d in probe]
    assert len(index) == len(reference)


def test_a_shard_with_a_malformed_key_is_refused_by_name(tmp_path):
    cache = written(VectorCache(tmp_path, NS), ["a", "b"])
    (shard,) = sorted(cache.directory.glob("*.npz"))
    with np.load(shard) as z:
        vectors, truncated = z["vectors"], z["truncated"]
    np.savez(shard, keys=np.array(["ab" * 31, "cd" * 32]), vectors=vectors, truncated=truncated)
    with pytest.raises(HarnessError, match=shard.name):
        VectorCache(tmp_path, NS)


def test_entries_held_until_a_flush_read_back_and_write_one_shard(tmp_path):
    """Many small stores (a reranker stores once per question) are one shard at the flush; lookups between
    stores read the held entries, across the buffer's growth."""
    texts = [f"q{i} " + "a" * (i % 9) for i in range(300)]
    cache = VectorCache(tmp_path, NS)
    expected = np.concatenate([cache.encode(texts[i:i + 7], Recorder())[0] for i in range(0, 300, 7)])
    assert not list(cache.directory.glob("*.npz"))  # nothing written before the flush
    order = list(range(299, -1, -13))
    held, flags = cache.encode([texts[i] for i in order], lambda ts: pytest.fail("should be held"))
    assert held.tolist() == expected[order].tolist() and flags.tolist() == [len(texts[i]) > 5 for i in order]
    cache.flush()
    assert len(list(cache.directory.glob("*.npz"))) == 1
    again, _ = VectorCache(tmp_path, NS).encode(texts, lambda ts: pytest.fail("should be cached"))
    assert again.tobytes() == expected.tobytes()


def test_past_pending_bytes_a_cache_writes_by_itself(tmp_path):
    cache = VectorCache(tmp_path, NS, pending_bytes=1)
    cache.encode(["a", "b"], Recorder())
    cache.encode(["c"], Recorder())
    assert cache.shards_written == 2 and cache.flush() is None


@pytest.mark.parametrize(
    "ending, expected", [("", "written"), ("os._exit(0)", "lost"), ("shutil.rmtree(root)", "gone")]
)
def test_at_exit_a_process_writes_what_it_held_unless_killed_or_its_root_was_removed(
    tmp_path, ending, expected
):
    """A normal exit writes the held entries; a killed process leaves no shard and no temporary; a cache whose
    root was removed (a rescore's scratch copy) is not recreated at exit."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = tmp_path / "cache"
    script = f"""
import os, shutil, numpy as np
from harness.retrieval.cache import CacheNamespace, VectorCache
root = {str(root)!r}
os.makedirs(root)  # a scratch copy's cache folder exists from the start
cache = VectorCache(root, CacheNamespace("embedding", "org/model", "sha256:abc", "search_document: "))
cache.encode(["a", "b"], lambda ts: (np.ones((len(ts), 3), dtype=np.float32), np.zeros(len(ts), dtype=bool)))
{ending}
"""
    project = Path(__file__).resolve().parents[1]
    subprocess.run(
        [sys.executable, "-c", script],
        check=True,
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(project)},
    )
    if expected == "gone":
        assert not root.exists()
        return
    directory = root / NS.dirname
    assert len(list(directory.glob("*.npz"))) == (expected == "written") and not list(
        directory.glob(".*.tmp")
    )
    enc = Recorder()
    VectorCache(root, NS).encode(["a", "b"], enc)
    assert enc.calls == ([] if expected == "written" else [["a", "b"]])


def test_entries_of_another_width_start_a_new_shard_and_all_read_back(tmp_path):
    """A shard holds one width: held entries are written first, and lookups on either side stay right."""
    cache = VectorCache(tmp_path, NS)
    narrow, _ = cache.encode(["a", "bb"], Recorder())  # width 3
    wide, _ = cache.encode(["ccc"], lambda ts: (np.full((len(ts), 5), 2.0), np.ones(len(ts), dtype=bool)))
    assert cache.shards_written == 1  # the width change wrote the narrow entries
    again, flags = cache.encode(["ccc"], lambda ts: pytest.fail("should be held"))
    assert again.tolist() == wide.tolist() and flags.tolist() == [True]
    assert (
        cache.encode(["bb", "a"], lambda ts: pytest.fail("should be cached"))[0].tolist()
        == narrow[::-1].tolist()
    )
    cache.flush()
    reopened = VectorCache(tmp_path, NS)
    assert reopened.encode(["ccc"], lambda ts: pytest.fail("should be cached"))[0].tolist() == wide.tolist()
