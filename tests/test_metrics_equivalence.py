"""The fast paths agree with the definitions, on generated inputs.

The scorers grow one running selection over ascending budgets, slice a cut unit's 5-grams from its
chunk's, and read only the ranking's head. Here a direct transcription of DESIGN section 7 (fill_budget
per budget, words of each unit's text, plain set unions) must give identical values.
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.metrics.budget import TokenCache, budget_cuts, fill_budget, needed_prefix
from harness.metrics.ngrams import GramCache, unit_grams
from harness.metrics.registry import METRIC_SETS, ScoringCache, score_question
from harness.tokens import cl100k, words
from metrics_support import WordEncoding, chunks, question

VOCAB = ["alpha", "beta", "Gamma", "delta", "e5", "x", "42", "beta-gamma", "Omega."]
ascii_text = st.text(alphabet=st.sampled_from(list("abcXYZ019 .,-\n")), max_size=80)
word_text = st.lists(st.sampled_from(VOCAB), min_size=0, max_size=30).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(ascii_text, st.data())
def test_cut_analysis_equals_analysing_the_cut_text(text, data):
    cut = data.draw(st.integers(0, len(text)))
    got, expected = GramCache().prefix(text, cut), unit_grams(text[:cut])
    assert (got.words, got.gram_seq, got.grams) == (expected.words, expected.gram_seq, expected.grams)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab Cd.\n é日x9")), max_size=60), st.data())
def test_token_prefix_equals_decoding_the_kept_tokens(text, data):
    tokens = TokenCache()
    n = data.draw(st.integers(0, tokens.count(text)))
    assert tokens.prefix(text, n) == cl100k().decode(cl100k().encode_ordinary(text)[:n])


@settings(max_examples=200, deadline=None)
@given(st.lists(word_text, max_size=8), st.lists(st.integers(1, 40), min_size=1, max_size=4, unique=True))
def test_budget_cuts_equal_fill_budget(texts, budgets):
    tokens = TokenCache(WordEncoding())
    budgets = sorted(budgets)
    head, counts = needed_prefix(chunks(*texts), budgets[-1], 0, tokens)
    for budget, (n_whole, cut) in zip(budgets, budget_cuts(head, counts, budgets, tokens)):
        units = fill_budget(chunks(*texts), budget, tokens)
        assert [u.text for u in units if not u.truncated] == [c.text for c in head[:n_whole]]
        assert (units[-1] if units and units[-1].truncated else None) == cut


# --- direct transcriptions of the definitions ---


def grams_of(text):
    w = words(text)
    return set(zip(w, w[1:], w[2:], w[3:], w[4:]))


def retrieved(evidence, unit_texts):
    ev_words = words(evidence)
    if len(ev_words) >= 5:
        ev = grams_of(evidence)
        union = set().union(*(grams_of(t) for t in unit_texts))
        return 2 * len(ev & union) >= len(ev)
    n = len(ev_words)
    return n > 0 and any(
        words(t)[i : i + n] == ev_words for t in unit_texts for i in range(len(words(t)) - n + 1)
    )


def reference_qasper(evidence, texts, budgets, tokens):
    gold = sorted(set(evidence))
    out = {}
    for b in budgets:
        flags = [retrieved(e, [u.text for u in fill_budget(chunks(*texts), b, tokens)]) for e in gold]
        out |= {
            f"rec@{b}t": sum(flags) / len(flags),
            f"complete@{b}t": float(all(flags)),
            f"partial@{b}t": float(any(flags)),
        }
    for k in (1, 3, 5):
        flags = [retrieved(e, texts[:k]) for e in gold]
        out |= {f"rec@{k}": sum(flags) / len(flags), f"hit@{k}": float(any(flags))}
    return out


def reference_freshstack(spans, texts, budgets, tokens):
    gold = set().union(*(grams_of(s) for s in spans))
    out = {}
    for b in budgets:
        selected = set().union(*(grams_of(u.text) for u in fill_budget(chunks(*texts), b, tokens)))
        out[f"prec@{b}t"] = len(selected & gold) / len(selected) if selected else 0.0
        out[f"rec@{b}t"] = len(selected & gold) / len(gold)
    relevant = [bool(grams_of(t)) and 2 * len(grams_of(t) & gold) >= len(grams_of(t)) for t in texts[:10]]
    out |= {f"hit@{k}": float(any(relevant[:k])) for k in (1, 3, 5, 10)}
    out["mrr@10"] = next((1 / r for r, rel in enumerate(relevant, 1) if rel), 0.0)
    return out


@settings(max_examples=150, deadline=None)
@given(
    st.lists(word_text, min_size=1, max_size=3),
    st.lists(word_text, max_size=12),
    st.lists(st.integers(1, 60), min_size=1, max_size=3, unique=True),
)
def test_qasper_scorer_equals_the_definition(evidence, texts, budgets):
    cache = ScoringCache(tokens=TokenCache(WordEncoding()))
    got = dict(score_question("qasper", question(*evidence), chunks(*texts), budgets, cache=cache))
    assert got == reference_qasper(evidence, texts, sorted(budgets), cache.tokens)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(word_text.filter(lambda t: len(words(t)) >= 5), min_size=1, max_size=3),
    st.lists(word_text, max_size=14),
    st.lists(st.integers(1, 80), min_size=1, max_size=3, unique=True),
)
def test_freshstack_scorer_equals_the_definition(spans, texts, budgets):
    cache = ScoringCache(tokens=TokenCache(WordEncoding()))
    got = dict(score_question("freshstack", question(*spans), chunks(*texts), budgets, cache=cache))
    assert got == reference_freshstack(spans, texts, sorted(budgets), cache.tokens)


def test_shared_cache_gives_the_same_values_as_fresh_caches():
    shared = ScoringCache(tokens=TokenCache(WordEncoding()))
    texts = ["alpha beta Gamma delta e5 x", "x 42 alpha beta Gamma delta", "Omega. beta-gamma e5 x 42 alpha"]
    q = question("beta Gamma delta e5 x 42", "Omega beta")
    for ranking in (texts, texts[::-1], texts[1:]):
        for name in METRIC_SETS:
            budgets = METRIC_SETS[name].default_budgets
            fresh = ScoringCache(tokens=TokenCache(WordEncoding()))
            assert score_question(name, q, chunks(*ranking), budgets, cache=shared) == score_question(
                name, q, chunks(*ranking), budgets, cache=fresh
            )


def test_a_gram_cache_keeps_one_string_per_distinct_word():
    """Analyses share their words (memory at paper scale): the same word in two texts, whole or cut, is one
    object, and the analysis equals the unshared one."""
    from harness.metrics.ngrams import GramCache, unit_grams

    cache = GramCache()
    a, b = "The cache keeps the index warm across runs", "Runs of the index: cache hits and misses"
    first, second = cache.get(a), cache.get(b)
    assert first.words == unit_grams(a).words and first.grams == unit_grams(a).grams
    shared = {w: w for w in first.words}
    assert all(shared[w] is w for w in second.words if w in shared)
    assert cache.get_transient("the cache again").words[1] is first.words[1]
