"""RM and SM, the count-matched controls of M: same merges per document or a recorded shortfall."""

import numpy as np
import pytest

from arms_support import doc_chunks, sized
from harness.arms.addon_descriptives import shortfall_summary
from harness.arms.merge import merge_by_keys, merged_fragment_ids
from harness.arms.merge_controls import (
    fitting_pairs,
    random_merges,
    random_merges_over_seeds,
    rm_seeds,
    similarity_merges,
)
from harness.errors import InputError


def fragments(result_chunks):
    """Each output chunk as the positions (start line // 10) of the E chunks it holds."""
    return [
        [int(i.split("#")[1][:4]) for i in merged_fragment_ids(c)] or [c.start_line // 10]
        for c in result_chunks
    ]


def two_documents():
    a = doc_chunks(["k", "j", "k", "j", "", "k", "x", "y", "x", "z"], doc_id="d/a.md")
    b = doc_chunks(["p", "q", "p"], doc_id="d/b.md")
    return a + b


def test_m_rm_and_sm_make_the_same_merges_per_document():
    chunks = two_documents()
    m = merge_by_keys(chunks)
    assert m.merges == {"d/a.md": 4, "d/b.md": 1}
    embeddings = np.random.default_rng(3).normal(size=(len(chunks), 8))
    for result in [random_merges(chunks, m.merges, seed=s) for s in rm_seeds(0)] + [
        similarity_merges(chunks, m.merges, embeddings)
    ]:
        assert result.merges == m.merges
        assert result.shortfall == {"d/a.md": 0, "d/b.md": 0}
        for doc_id, n in m.merges.items():
            assert (
                sum(c.doc_id == doc_id for c in result.chunks) == sum(c.doc_id == doc_id for c in chunks) - n
            )


def test_controls_merge_only_adjacent_chunks_in_document_order():
    chunks = two_documents()
    result = random_merges(chunks, merge_by_keys(chunks).merges, seed=11)
    flat = [p for unit in fragments(result.chunks) for p in unit]
    assert flat == [c.start_line // 10 for c in chunks]  # every chunk once, order kept
    for unit in fragments(result.chunks):
        assert unit == list(range(unit[0], unit[0] + len(unit)))


def test_shortfall_is_recorded_when_no_adjacent_pair_fits():
    # M joins the two 1,000-character "a" chunks across a 2,500 one; no adjacent pair fits under 3,000
    chunks = [sized(0, 1000, "a"), sized(1, 2500, "b"), sized(2, 1000, "a"), sized(3, 2500, "b")]
    m = merge_by_keys(chunks)
    assert m.merges == {"d/doc.md": 1}
    for result in (random_merges(chunks, m.merges, seed=0), similarity_merges(chunks, m.merges, np.eye(4))):
        assert result.merges == {"d/doc.md": 0}
        assert result.shortfall == {"d/doc.md": 1}
        assert len(result.chunks) == 4
    summary = shortfall_summary({"d/doc.md": 1, "d/ok.md": 0})
    assert (summary.documents, summary.documents_short, summary.merges_short) == (2, 1, 1)
    assert summary.by_document == {"d/doc.md": 1}


def test_partial_shortfall_counts_only_the_missing_merges():
    chunks = [sized(0, 1400, "a"), sized(1, 1400, "b"), sized(2, 1400, "c")]  # one join fits, then none
    result = random_merges(chunks, {"d/doc.md": 2}, seed=0)
    assert (result.merges, result.shortfall) == ({"d/doc.md": 1}, {"d/doc.md": 1})


def test_the_cap_counts_separators_for_adjacent_joins():
    units = [[0], [1], [2]]
    assert fitting_pairs(units, [1000, 1998, 1], 3000).tolist() == [0, 1]  # 1000 + 2 + 1998 = 3000
    assert fitting_pairs(units, [1000, 1999, 1], 3000).tolist() == [1]
    assert fitting_pairs([[0, 1], [2]], [1000, 998, 998], 3000).tolist() == [0]  # 1000+2+998 + 2 + 998


def test_rm_is_deterministic_per_seed_and_seeds_differ():
    chunks = doc_chunks(["k"] * 30)
    targets = {"d/doc.md": 6}
    runs = random_merges_over_seeds(chunks, targets, rm_seeds(100))
    assert list(runs) == [100, 101, 102, 103, 104]
    again = random_merges_over_seeds(chunks, targets, rm_seeds(100))
    assert all(runs[s].chunks == again[s].chunks and runs[s].seed == s for s in runs)
    layouts = {tuple(map(tuple, fragments(r.chunks))) for r in runs.values()}
    assert len(layouts) == 5


def test_rm_for_a_document_does_not_depend_on_the_other_documents():
    chunks = two_documents()
    targets = merge_by_keys(chunks).merges
    alone = [c for c in chunks if c.doc_id == "d/b.md"]
    together = random_merges(chunks, targets, seed=5).chunks
    assert [c for c in together if c.doc_id == "d/b.md"] == random_merges(alone, {"d/b.md": 1}, seed=5).chunks


def test_sm_merges_the_most_similar_adjacent_pair():
    chunks = doc_chunks(["a", "b", "c", "d"])
    embeddings = np.array([[1.0, 0.0], [0.0, 1.0], [0.1, 1.0], [1.0, 0.0]])
    result = similarity_merges(chunks, {"d/doc.md": 1}, embeddings)
    assert fragments(result.chunks) == [[0], [1, 2], [3]]


def test_sm_compares_the_mean_of_a_merged_unit():
    chunks = doc_chunks(["a", "b", "c", "d"])
    # first join: 1+2 (cos 0.8). Their mean (0.75, 0.75, 0) is closer to chunk 0 (0.71) than to chunk 3
    # (0.63); judged by its first member alone, the unit would join chunk 3 (0.8 against 0.45)
    embeddings = np.array([[0.0, 1.0, 0.0], [1.0, 0.5, 0.0], [0.5, 1.0, 0.0], [1.0, 0.0, 0.5]])
    result = similarity_merges(chunks, {"d/doc.md": 2}, embeddings)
    assert fragments(result.chunks) == [[0, 1, 2], [3]]


def test_sm_ties_go_to_the_earlier_pair_and_the_cap_holds():
    chunks = doc_chunks(["a", "b", "c", "d"])
    assert fragments(similarity_merges(chunks, {"d/doc.md": 1}, np.ones((4, 3))).chunks) == [[0, 1], [2], [3]]
    big = [sized(0, 100, "a"), sized(1, 2950, "b"), sized(2, 100, "c")]
    identical_pair_too_long = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert fragments(similarity_merges(big, {"d/doc.md": 1}, identical_pair_too_long).chunks) == [
        [0],
        [1],
        [2],
    ]
    big_ok = [sized(0, 100, "a"), sized(1, 2800, "b"), sized(2, 100, "c")]
    assert fragments(similarity_merges(big_ok, {"d/doc.md": 1}, identical_pair_too_long).chunks) == [
        [0, 1],
        [2],
    ]


def test_zero_embeddings_do_not_break_similarity():
    chunks = doc_chunks(["a", "b", "c"])
    result = similarity_merges(chunks, {"d/doc.md": 1}, np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 0.0]]))
    assert fragments(result.chunks) == [[0], [1, 2]]


def test_bad_inputs_are_refused_by_name():
    chunks = doc_chunks(["a", "b"])
    with pytest.raises(InputError, match="one row per chunk"):
        similarity_merges(chunks, {"d/doc.md": 1}, np.ones((3, 2)))
    with pytest.raises(InputError, match="missing \\['d/doc.md'\\]"):
        random_merges(chunks, {}, seed=1)
    with pytest.raises(InputError, match="seed must be an integer"):
        random_merges(chunks, {"d/doc.md": 1}, seed=None)
    with pytest.raises(InputError, match="distinct"):
        random_merges_over_seeds(chunks, {"d/doc.md": 1}, [1, 1])
    with pytest.raises(InputError, match="target must be an integer >= 0"):
        random_merges(chunks, {"d/doc.md": -1}, seed=1)
