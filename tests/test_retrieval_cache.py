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


def test_rerun_encodes_nothing_it_has_seen(tmp_path):
    enc = Recorder()
    cache = VectorCache(tmp_path, NS)
    vectors, truncated = cache.encode(["aa", "banana", "aa", "c"], enc)
    assert enc.calls == [["aa", "banana", "c"]]  # duplicates encoded once
    assert (cache.hits, cache.misses) == (0, 3)
    assert vectors[:, 0].tolist() == [2, 6, 2, 1] and truncated.tolist() == [False, True, False, False]

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
    VectorCache(tmp_path, NS).encode(["aa"], Recorder())
    enc = Recorder()
    VectorCache(tmp_path, other).encode(["aa"], enc)
    assert enc.calls == [["aa"]]


def test_each_batch_is_one_complete_shard_and_leftover_temp_files_are_ignored(tmp_path):
    cache = VectorCache(tmp_path, NS)
    cache.encode(["a"], Recorder())
    cache.encode(["b", "c"], Recorder())
    assert len(list(cache.directory.glob("*.npz"))) == 2
    # a write killed before its rename leaves only a temporary file: the rerun recomputes that batch alone
    (cache.directory / ".deadbeef.npz.123.tmp").write_bytes(b"partial")
    enc = Recorder()
    VectorCache(tmp_path, NS).encode(["a", "b", "c", "d"], enc)
    assert enc.calls == [["d"]]


def test_corrupt_shard_is_reported_with_its_path(tmp_path):
    cache = VectorCache(tmp_path, NS)
    cache.encode(["a"], Recorder())
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
    VectorCache(tmp_path, ns, dtype=np.float64).encode(["p"], lambda ts: (np.array([[value]]), np.array([False])))
    got, _ = VectorCache(tmp_path, ns, dtype=np.float64).encode(["p"], lambda ts: pytest.fail("should be cached"))
    assert got[0, 0] == value


def test_empty_input(tmp_path):
    vectors, flags = VectorCache(tmp_path, NS).encode([], Recorder())
    assert vectors.shape == (0, 0) and flags.shape == (0,)


def test_vectors_outside_the_resident_budget_are_read_back_identical(tmp_path):
    # Only the index stays in memory: with room for one shard, every lookup of another shard rereads it.
    texts = [f"text {i} " + "a" * (i % 7) for i in range(40)]
    cache = VectorCache(tmp_path, NS, resident_bytes=1)
    first = [cache.encode(texts[i:i + 8], Recorder())[0] for i in range(0, 40, 8)]  # five shards
    assert len(cache._resident) == 1
    order = [7, 39, 0, 12, 7, 33, 21]
    again, flags = cache.encode([texts[i] for i in order], lambda ts: pytest.fail("should be cached"))
    assert again.tolist() == [first[i // 8][i % 8].tolist() for i in order]
    assert flags.tolist() == [len(texts[i]) > 5 for i in order]
    fresh, _ = VectorCache(tmp_path, NS, resident_bytes=1).encode([texts[i] for i in order], Recorder())
    assert fresh.tobytes() == again.tobytes() and len(cache) == 40


def test_a_key_held_by_two_shards_reads_from_the_first_in_name_order(tmp_path):
    VectorCache(tmp_path, NS).encode(["a"], Recorder())  # a = [1, 1, 1]
    other = tmp_path / "other"
    VectorCache(other, NS).encode(["a", "b"], lambda ts: (np.full((len(ts), 3), 9.0), np.zeros(len(ts), bool)))
    directory = VectorCache(tmp_path, NS).directory
    for shard in (other / NS.dirname).glob("*.npz"):
        shard.rename(directory / shard.name)
    first = sorted(directory.glob("*.npz"))[0]
    expected = np.load(first)["vectors"][0].tolist()
    vectors, _ = VectorCache(tmp_path, NS).encode(["a"], lambda ts: pytest.fail("should be cached"))
    assert vectors[0].tolist() == expected


def test_a_shard_whose_vectors_do_not_match_its_keys_is_reported_with_its_path(tmp_path):
    cache = VectorCache(tmp_path, NS)
    cache.encode(["a", "b"], Recorder())
    shard = next(cache.directory.glob("*.npz"))
    with np.load(shard) as z:
        keys, truncated = z["keys"], z["truncated"]
    np.savez(shard, keys=keys, vectors=np.zeros((1, 3), dtype=np.float32), truncated=truncated)
    with pytest.raises(HarnessError, match=rf"{shard.name}: \(1, 3\) vectors for 2 keys"):
        VectorCache(tmp_path, NS).encode(["b"], Recorder())
