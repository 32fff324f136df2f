"""Retrieval-time expansion E+KX, E+AX, E+SX: what is inserted, in which order, once only, then the budget
cut."""

import pytest

from arms_support import e_chunk
from harness.arms.addon_descriptives import inserted_per_expansion
from harness.errors import InputError
from harness.metrics.budget import TokenCache, fill_budget
from harness.retrieval.expansion import ChunkPositions, expand_ranking
from metrics_support import WordEncoding

# position: (text, key, related keys, section)
LAYOUT = [
    ("a0 b0", "install", (), "A"),
    ("a1 b1 c1 d1", "config", ("install",), "A"),
    ("a2 b2 c2", "routing", (), "B"),
    ("a3 b3 c3", "install", (), "B"),
    ("a4", "views", (), "B"),
    ("a5 b5", "cache", ("config",), "C"),
    ("a6", "", (), "A"),
    ("a7", "views", (), "C"),
]
DOC = [e_chunk(i, text, key, related=rel, section=sec) for i, (text, key, rel, sec) in enumerate(LAYOUT)]
# another document reusing a key: never inserted after DOC's chunks
OTHER = [
    e_chunk(0, "z0", "install", doc_id="d/other.md", section="A"),
    e_chunk(1, "z1", "x", doc_id="d/other.md"),
]
CHUNK_SET = ChunkPositions(DOC + OTHER)


def ids(*positions):
    return [DOC[p].chunk_id for p in positions]


def positions(expansion):
    """DOC's chunks by position; the other document's as "other0000"."""
    out = []
    for cid in expansion.chunk_ids:
        doc_id, rest = cid.split("#")
        out.append(int(rest[:4]) if doc_id == "d/doc.md" else f"other{rest[:4]}")
    return out


def test_kx_inserts_shared_key_and_related_key_links_in_document_order():
    # chunk 0 ("install"): 1 lists "install" as related, 3 shares the key
    # chunk 1 ("config", related "install"): 0 and 3 carry "install", 5 lists "config"
    kx = expand_ranking(ids(2, 0, 4), CHUNK_SET, "KX")
    assert positions(kx) == [2, 0, 1, 3, 4, 7]
    assert kx.inserted == dict(zip(ids(2, 0, 4), [0, 2, 1]))
    assert positions(expand_ranking(ids(1), CHUNK_SET, "KX")) == [1, 0, 3, 5]


def test_no_chunk_is_inserted_twice_and_pulled_up_chunks_are_skipped_later():
    ranking = ids(0, 3, 1) + [OTHER[0].chunk_id]
    kx = expand_ranking(ranking, CHUNK_SET, "KX")
    assert positions(kx) == [0, 1, 3, "other0000"]  # the other document's "install" chunk only where ranked
    assert len(set(kx.chunk_ids)) == len(kx.chunk_ids)
    assert kx.inserted == {DOC[0].chunk_id: 2, OTHER[0].chunk_id: 0}


def test_ax_takes_as_many_neighbours_as_kx_next_previous_next1_previous1():
    ranking = ids(4)
    ax = expand_ranking(ranking, CHUNK_SET, "AX", kx_inserted={DOC[4].chunk_id: 5})
    assert positions(ax) == [4, 5, 3, 6, 2, 7]
    kx = expand_ranking(ids(0, 3, 1), CHUNK_SET, "KX")
    ax = expand_ranking(ids(0, 3, 1), CHUNK_SET, "AX", kx_inserted=kx.inserted)
    # 0 gets two neighbours (1, then 2: there is no previous); 3 got none under KX, so none here either
    assert positions(ax) == [0, 1, 2, 3]
    assert ax.inserted == dict(zip(ids(0, 3), [2, 0]))


def test_ax_falls_short_when_the_neighbours_run_out():
    ax = expand_ranking(ids(7), CHUNK_SET, "AX", kx_inserted={DOC[7].chunk_id: 9})
    assert positions(ax) == [7, 6, 5, 4, 3, 2, 1, 0]
    assert ax.inserted == {DOC[7].chunk_id: 7}


def test_sx_inserts_the_same_section_in_document_order():
    assert positions(expand_ranking(ids(3), CHUNK_SET, "SX")) == [3, 2, 4]
    assert positions(expand_ranking(ids(6, 0), CHUNK_SET, "SX")) == [6, 0, 1]
    no_section = ChunkPositions([e_chunk(0, "x", section=""), e_chunk(1, "y", section="")])
    assert (
        len(expand_ranking([no_section.documents["d/doc.md"][0].chunk_id], no_section, "SX").chunk_ids) == 1
    )


def test_budget_cuts_the_expanded_list_as_it_cuts_any_ranking():
    tokens = TokenCache(WordEncoding())
    by_id = {c.chunk_id: c for c in DOC}
    e_units = fill_budget([by_id[i] for i in ids(2, 0, 4)], 10, tokens)
    assert [(u.rank, u.text, u.truncated) for u in e_units] == [
        (1, "a2 b2 c2", False),
        (2, "a0 b0", False),
        (3, "a4", False),
    ]
    kx = expand_ranking(ids(2, 0, 4), CHUNK_SET, "KX")  # 2, 0, 1, 3, 4, 7: 3 + 2 + 4 + 3 tokens ...
    units = fill_budget([by_id[i] for i in kx.chunk_ids], 10, tokens)
    assert [(u.rank, u.text, u.n_tokens, u.truncated) for u in units] == [
        (1, "a2 b2 c2", 3, False),
        (2, "a0 b0", 2, False),
        (3, "a1 b1 c1 d1", 4, False),
        (4, "a3 ", 1, True),  # the inserted chunk crossing the budget is cut; chunk 4 is never reached
    ]


def test_insertion_counts_summarise_over_questions():
    kx_a = expand_ranking(ids(2, 0, 4), CHUNK_SET, "KX").inserted
    kx_b = expand_ranking(ids(1), CHUNK_SET, "KX").inserted
    summary = inserted_per_expansion([kx_a, kx_b])
    assert (summary.units, summary.total, summary.mean) == (4, 6, 1.5)
    assert summary.distribution == {0: 1, 1: 1, 2: 1, 3: 1}


def test_bad_inputs_are_refused():
    with pytest.raises(InputError, match="mode must be one of KX, AX, SX"):
        expand_ranking(ids(0), CHUNK_SET, "XX")
    with pytest.raises(InputError, match="needs kx_inserted"):
        expand_ranking(ids(0), CHUNK_SET, "AX")
    with pytest.raises(InputError, match="not in the chunk set"):
        expand_ranking(["nope"], CHUNK_SET, "KX")
    with pytest.raises(InputError, match="names a chunk twice"):
        expand_ranking(ids(0, 0), CHUNK_SET, "KX")
    with pytest.raises(InputError, match="occurs twice"):
        ChunkPositions(DOC + DOC[:1])
