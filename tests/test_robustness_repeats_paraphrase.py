"""Robustness analyses of issue 15: a per-arm prompt override (E-para) and repeat generations (`repeats`).

Config errors, cache keys of repeats, the build of a repeated arm (seeds, calls per repeat, one ledger),
the per-question pooling over repeats, the between-run spread, `harness estimate`, and freeze drift."""

from __future__ import annotations

import hashlib
import math
from types import SimpleNamespace

import pandas as pd
import pytest
from llm_fake_ollama import FakeOllama
from llm_study import chunks_for, make_study, small_corpus

from harness.arms.llm_arms import arm_templates, build_llm_arm
from harness.arms.registry import BUILDERS
from harness.arms.repeats import REPEAT_SEED_STRIDE, repeat_seeds
from harness.config.study_config import load_study_config
from harness.errors import HarnessError
from harness.files import canonical_json, sha256_text
from harness.llm.cache import GenerationCache, cache_key
from harness.llm.ledger import SpendLedger
from harness.llm.session import LlmSession
from harness.plan.model import TestPlan as RegisteredTest
from harness.stats.contrast import ContrastResult
from harness.stats.decided import DecidedRow
from harness.stats.spread import repeat_spread

OLLAMA = {"backend": "ollama", "name": "fake", "host": "http://127.0.0.1:1", "seed": 0, "num_ctx": 4096,
          "num_predict": 256}


def _config(arms: dict, models: dict | None = None):
    raw = {"datasets": {"papers": {"adapter": "jsonl", "metric_set": "qasper"},
                        "docs": {"adapter": "jsonl", "metric_set": "freshstack"}},
           "models": models or {"m": OLLAMA}, "arms": arms, "retrievers": {"bm25": {"type": "bm25"}}}
    return load_study_config(raw, path="study.yaml", default_name="t")


# --- config errors ---


def test_a_prompt_role_the_kind_does_not_have_is_an_error_naming_arm_and_key():
    with pytest.raises(
        HarnessError,
        match=r"`arms\.E-para\.prompts\.contextual` is not a prompt role of kind E "
        r"\(its roles: enrich\)",
    ):
        _config({"E-para": {"kind": "E", "model": "m", "prompts": {"contextual": "x.txt"}}})
    assert _config({"E-para": {"kind": "E", "model": "m", "prompts": {"enrich": "x.txt"}}}).arms[
        "E-para"
    ].prompts == {"enrich": "x.txt"}


def test_a_missing_prompt_file_is_an_error_naming_arm_and_key(tmp_path):
    study = make_study(tmp_path, {"m": OLLAMA}, {"E-para": {"kind": "E", "model": "m",
                                                            "prompts": {"enrich": "enrich_missing.txt"}}})
    with pytest.raises(
        HarnessError, match=r"arms\.E-para\.prompts\.enrich: 'enrich_missing\.txt' is not a file"
    ):
        arm_templates(study, "E-para")
    (study.prompts_dir / "enrich_missing.txt").write_text("Chunk: {chunk_text}", encoding="utf-8")
    templates = arm_templates(study, "E-para")
    assert templates["enrich"].path.name == "enrich_missing.txt"
    assert arm_templates(study, "E-para")["enrich"].sha256 != (study.prompts_dir / "enrich.txt").read_bytes()


def test_repeats_at_temperature_zero_are_refused_unless_the_arm_samples():
    with pytest.raises(HarnessError, match=r"`arms\.E-rep\.repeats` needs sampling, but the arm decodes at "
                                           r"temperature 0\.0 on dataset papers"):
        _config({"E-rep": {"kind": "E", "model": "m", "repeats": 2}})
    # a per-dataset temperature must sample on every dataset the arm covers
    with pytest.raises(HarnessError, match=r"temperature 0\.0 on dataset docs"):
        _config(
            {
                "E-rep": {
                    "kind": "E",
                    "model": "m",
                    "repeats": 2,
                    "model_options": {"temperature": {"papers": 0.7}},
                }
            }
        )
    ok = _config({"E-rep": {"kind": "E", "model": "m", "repeats": 2, "datasets": ["papers"],
                            "model_options": {"temperature": {"papers": 0.7}}}})
    assert ok.arms["E-rep"].repeats == 2
    assert _config({"E-rep": {"kind": "E", "model": "m", "repeats": 3}},
                   models={"m": OLLAMA | {"temperature": 0.5}}).arms["E-rep"].repeats == 3


@pytest.mark.parametrize("extra, message", [
    ({"repeats": 1}, r"`arms\.E-rep\.repeats` must be"),
    ({"repeats": 2, "allow_shortfall": True}, r"cannot be combined with `allow_shortfall`"),
])
def test_other_repeat_settings_are_refused(extra, message):
    with pytest.raises(HarnessError, match=message):
        _config({"E-rep": {"kind": "E", "model": "m", "model_options": {"temperature": 0.7}, **extra}})


def test_unset_robustness_keys_leave_the_arm_config_unchanged():
    """Arms without `prompts`/`repeats` record exactly what they did before (inputs hashes, frozen
    configs)."""
    from harness.config import to_plain

    plain = to_plain(_config({"E": {"kind": "E", "model": "m"}}).arms["E"])
    assert "prompts" not in plain and "repeats" not in plain


# --- cache keys ---

IDENTITY = {
    "backend": "ollama",
    "model": "fake",
    "digest": "sha256:" + "ab" * 32,
    "options": {"temperature": 0.7},
}
MESSAGES = [{"role": "user", "content": "describe the chunk"}]


def _key_before_repeats(seed: int) -> str:
    """The cache key formula as it stood before repeats existed (written out, so the test pins it)."""
    material = {"backend": IDENTITY["backend"], "model": IDENTITY["model"], "digest": IDENTITY["digest"],
                "options": IDENTITY["options"] | {"seed": seed, "schema": None}, "prompt": MESSAGES}
    return sha256_text(canonical_json(material))


def test_repeat_zero_keeps_the_plain_key_and_later_repeats_differ():
    plain = cache_key(IDENTITY, MESSAGES, schema=None, seed=0)
    assert plain == cache_key(IDENTITY, MESSAGES, schema=None, seed=0, repeat=0) == _key_before_repeats(0)
    one = cache_key(IDENTITY, MESSAGES, schema=None, seed=0, repeat=1)
    assert one != plain and one != cache_key(IDENTITY, MESSAGES, schema=None, seed=0, repeat=2)
    with pytest.raises(ValueError):
        cache_key(IDENTITY, MESSAGES, schema=None, seed=0, repeat=-1)


def test_repeat_seeds_shift_every_attempt():
    assert repeat_seeds([0, 1, 2, 3], 0) == [0, 1, 2, 3]
    assert repeat_seeds([0, 1, 2, 3], 2) == [2 * REPEAT_SEED_STRIDE + s for s in (0, 1, 2, 3)]


def test_session_keys_carry_the_repeat_and_not_the_host(tmp_path):
    """Two servers (hosts) of one model give the same keys; the repeat index changes them."""
    keys = {}
    for host in ("http://a:1", "http://b:2"):
        backend = SimpleNamespace(describe=lambda: dict(IDENTITY), billed=False, host=host,
                                  estimate_cost_usd=lambda m, o: 0.0,
                                  complete=lambda *a, **k: SimpleNamespace(text="{}", prompt_tokens=1,
                                                                           completion_tokens=1, wall_s=0.0,
                                                                           cost_usd=0.0, truncated=False))
        with GenerationCache(tmp_path / f"{host[7]}.jsonl") as cache:
            session = LlmSession(backend, cache, SpendLedger("E", None))
            for repeat in (0, 1):
                record = session.for_repeat(repeat).call(
                    MESSAGES, schema=None, seed=repeat_seeds([0], repeat)[0]
                )
                keys[host, repeat] = record.key
    assert keys["http://a:1", 0] == keys["http://b:2", 0] == _key_before_repeats(0)
    assert keys["http://a:1", 1] == keys["http://b:2", 1] != keys["http://a:1", 0]


# --- the build of a repeated arm ---


def test_a_repeated_arm_reuses_repeat_zero_and_records_each_run(tmp_path):
    docs, chunks = small_corpus(n_docs=2, n_chunks=3)
    with FakeOllama() as fake:
        model = OLLAMA | {"host": fake.host, "temperature": 0.7}
        study = make_study(tmp_path, {"m": model}, {
            "E": {"kind": "E", "model": "m"},
            "E-rep": {"kind": "E", "model": "m", "repeats": 2},
        }, llm={"workers": 1, "retry_seeds": [1, 2, 3], "spend_cap_usd": None})
        plain = build_llm_arm(
            study, "E", study.arms["E"], docs, chunks, render=BUILDERS["E"].render, progress=False
        )
        assert fake.total_chat_calls == 6
        rep = build_llm_arm(study, "E-rep", study.arms["E-rep"], docs, chunks, render=BUILDERS["E"].render,
                            progress=False)
    assert fake.total_chat_calls == 12  # repeat 0 came from the cache: only repeat 1 called the model
    assert {seed for _, seed in fake.chat_calls} == {0, REPEAT_SEED_STRIDE}
    llm = rep.manifest
    assert llm["repeats"] == 2 and llm["seeds"] == [0, 1, 2, 3]
    assert llm["per_repeat"]["r0"]["seeds"] == [0, 1, 2, 3]
    assert llm["per_repeat"]["r1"]["seeds"] == [1000, 1001, 1002, 1003]
    calls = {name: (run["calls"]["calls"], run["calls"]["fresh_calls"], run["calls"]["cache_hits"])
             for name, run in llm["per_repeat"].items()}
    assert calls == {"r0": (6, 0, 6), "r1": (6, 6, 0)}  # r0 from E's cache entries, r1 new
    assert llm["cost"]["calls"] == 12 and (llm["run"]["fresh_calls"], llm["run"]["cache_hits"]) == (6, 6)
    assert llm["chunks"] == 12 and llm["per_repeat"]["r1"]["chunks"] == 6
    # each repeat is one variant of the chunk set; repeat 0 is the plain arm's generation
    r0 = [c for c in rep.chunks if c.generated["variant"] == "r0"]
    assert [c.chunk_id for c in r0] == [f"{c.chunk_id}@r0" for c in plain.chunks]
    assert [c.indexed_text for c in r0] == [c.indexed_text for c in plain.chunks]
    assert [c.doc_id for c in rep.chunks] == [d.doc_id for d in docs for _ in range(6)]  # document-major
    assert "repeats" not in plain.manifest and "per_repeat" not in plain.manifest


def test_a_paraphrased_prompt_is_what_the_arm_sends(tmp_path):
    docs, chunks = small_corpus(n_docs=1, n_chunks=2)
    with FakeOllama() as fake:
        study = make_study(tmp_path, {"m": OLLAMA | {"host": fake.host}},
                           {"E-para": {"kind": "E", "model": "m", "prompts": {"enrich": "para.txt"}}},
                           llm={"workers": 1, "retry_seeds": [1], "spend_cap_usd": None})
        original = (study.prompts_dir / "enrich.txt").read_text(encoding="utf-8")
        (study.prompts_dir / "para.txt").write_text("PARAPHRASE\n" + original, encoding="utf-8")
        result = build_llm_arm(
            study, "E-para", study.arms["E-para"], docs, chunks, render=BUILDERS["E"].render, progress=False
        )
    sent = [r["messages"][-1]["content"] for r in fake.requests if r["path"] == "/api/chat"]
    assert len(sent) == 2 and all(p.startswith("PARAPHRASE\n") for p in sent)
    assert result.manifest["prompt_roles"] == {"enrich": "para.txt"}
    assert result.manifest["prompts"] == {"para.txt": hashlib.sha256(
        (study.prompts_dir / "para.txt").read_bytes()).hexdigest()}


# --- estimate ---


def test_estimate_counts_every_repeat(tmp_path, monkeypatch):
    from harness.arms import estimate

    docs, chunks = small_corpus(n_docs=2, n_chunks=3)
    study = make_study(tmp_path, {"m": OLLAMA | {"temperature": 0.7}}, {
        "E": {"kind": "E", "model": "m"}, "E-rep": {"kind": "E", "model": "m", "repeats": 3}})
    dataset = SimpleNamespace(name="papers", documents=docs)
    one = estimate.estimate_arm(
        study, dataset, "E", header_chunks=chunks, output_tokens=100, summary_tokens=10
    )
    three = estimate.estimate_arm(
        study, dataset, "E-rep", header_chunks=chunks, output_tokens=100, summary_tokens=10
    )
    assert (one.calls, one.repeats) == (6, 1)
    assert (three.calls, three.repeats) == (18, 3)
    assert three.prompt_tokens == 3 * one.prompt_tokens and three.output_tokens == 3 * one.output_tokens
    assert three.summary_allowance_tokens == 3 * one.summary_allowance_tokens == 3 * 4 * 10


# --- scoring: pooled per question, kept per repeat ---


def test_score_averages_repeats_per_question_and_keeps_each_repeat(tmp_path):
    from harness.arms.variants import tag_variant
    from harness.arms.render import render_text
    from harness.data.model import Evidence, Question
    from harness.metrics.registry import ScoringCache
    from harness.config.arm_kinds import get_kind
    from harness.grid.cells import ArmSpec, Cell, DatasetSpec, RetrieverSpec
    from harness.pipeline.score import Scope, score_cell

    doc, pieces = chunks_for("test/doc0", [("", "Alpha beta gamma delta epsilon zeta."),
                                            ("", "Tide gauges drift by millimetres per year."),
                                            ("", "Cassava leaves show brown streak lesions.")])
    base = [render_text(c) for c in pieces]
    # repeat r0 holds every chunk, the gold one among them; repeat r1 holds only a chunk without gold
    r0 = [tag_variant(c, "r0") for c in base]
    r1 = [tag_variant(base[0], "r1")]
    start, end = base[2].spans[0]
    q = Question(qid="q1", dataset="papers", query="?", cluster=doc.doc_id, stratum="", scope=(doc.doc_id,),
                 evidence=(Evidence(doc.doc_id, doc.text[start:end], start, end),))
    config = SimpleNamespace(assembly=None, ir_measures=None)
    study = SimpleNamespace(root=tmp_path, results_root=None, config=config)
    arm = SimpleNamespace(kind="E", repeats=2)
    cell = Cell(DatasetSpec("papers", None), ArmSpec("E-rep", arm, get_kind("E")),
                RetrieverSpec("bm25", None))
    context = SimpleNamespace(get=lambda name: _InOrder(), add_documents=lambda documents: None, memo=None,
                              rank_arm=lambda *args: None)
    dataset = SimpleNamespace(name="papers", metric_set="qasper", documents=[], questions=[])
    rows, variant_rows, counts = score_cell(study, dataset, cell, [Scope(doc.doc_id, r0 + r1, [q])],
                                            context, ScoringCache(), (512,), run_depth=10)
    pooled = {r.metric: r.value for r in rows}
    per = {(r.arm, r.metric): r.value for r in variant_rows}
    assert {r.arm for r in rows} == {"E-rep"} and {r.arm for r in variant_rows} == {"E-rep@r0", "E-rep@r1"}
    assert per["E-rep@r0", "rec@512t"] == 1.0 and per["E-rep@r1", "rec@512t"] == 0.0
    assert pooled["rec@512t"] == 0.5
    for metric, value in pooled.items():
        assert value == pytest.approx((per["E-rep@r0", metric] + per["E-rep@r1", metric]) / 2)
    assert counts["variants_averaged"] == ["r0", "r1"]


class _InOrder:
    """A retriever that ranks a scope's chunks in their given order (the test controls the chunk sets)."""

    def index(self, key, chunks):
        from harness.retrieval.base import ScopeIndex

        class InOrderIndex(ScopeIndex):
            def search(self, query):
                import numpy as np
                from harness.retrieval.base import Ranking

                return Ranking(
                    order=np.arange(self.n_chunks), scores=np.arange(self.n_chunks, 0, -1, dtype=float)
                )

        return InOrderIndex(key, len(chunks))


# --- the between-run spread on a hand-computed example ---


def _decided(test: str, *, estimate: float, ci95: tuple[float, float]) -> DecidedRow:
    """A decided E-rep - S+T row of the released statistics, with the pooled estimate and 95% CI given."""
    contrast = ContrastResult(
        dataset="papers", a="E-rep", b="S+T", retriever="hybrid", metric="rec@512t", n_questions=3,
        n_clusters=3, n_strata=1, estimate=estimate, ci90_bca=ci95, ci95_bca=ci95, ci90_percentile=ci95,
        ci95_percentile=ci95, z0=0.0, acceleration=0.0, resamples=1000, seed=1, p_signflip=0.5,
        signflip_exact=True, signflip_flips=8, se_cluster=10.0)
    return DecidedRow(test=test, rule="two-sided", dataset="papers", a="E-rep", b="S+T", retriever="hybrid",
                      metric="rec@512t", margin=None, tier="exploratory", source="plan", verdict="n.d.",
                      contrast=contrast, ci_shown="95")


def _rows(arm: str, values: dict[str, float], metric: str = "rec@512t") -> list[dict]:
    return [{"dataset": "papers", "arm": arm, "retriever": "hybrid", "qid": q, "cluster": q[0], "stratum": "",
             "metric": metric, "value": v} for q, v in values.items()]


def _test(test_id: str, a: str, b: str, subset=None) -> RegisteredTest:
    return RegisteredTest(id=test_id, family="robustness", a=a, b=b, retriever="hybrid", dataset="papers",
                    metric="rec@512t", rule="two-sided", margin=None, subset=subset, source="plan")


def test_spread_of_a_contrast_over_repeats_by_hand():
    # questions a1, a2 (cluster a) and b1 (cluster b); values in [0, 1], differences in points
    st = {"a1": 0.5, "a2": 0.0, "b1": 1.0}
    r0 = {"a1": 1.0, "a2": 0.5, "b1": 1.0}   # diffs +50, +50, 0   -> mean +33.33
    r1 = {"a1": 0.5, "a2": 0.0, "b1": 0.5}   # diffs 0, 0, -50     -> mean -16.67
    r2 = {"a1": 1.0, "a2": 0.0, "b1": 1.0}   # diffs +50, 0, 0     -> mean +16.67
    pooled = {q: (r0[q] + r1[q] + r2[q]) / 3 for q in st}
    table = pd.DataFrame(_rows("S+T", st) + _rows("E-rep", pooled))
    variants = pd.DataFrame(_rows("E-rep@r0", r0) + _rows("E-rep@r1", r1) + _rows("E-rep@r2", r2))
    test = _test("R-rep", "E-rep", "S+T")
    spread = repeat_spread(pd.concat([table, variants]), test, {"E-rep": ["r0", "r1", "r2"]})
    assert spread.repeats == ("r0", "r1", "r2") and spread.n_questions == 3
    assert spread.estimates == pytest.approx((100 / 3, -50 / 3, 50 / 3))
    # mean 100/9; deviations 200/9, -250/9, 50/9; SD = sqrt((200² + 250² + 50²) / 81 / 2) = (50/9) sqrt(21)
    assert spread.sd == pytest.approx(50 / 9 * math.sqrt(21)) == pytest.approx(25.4588, abs=1e-4)
    assert (spread.low, spread.high) == pytest.approx((-50 / 3, 100 / 3))
    # the mean over repeats is the pooled contrast (per-question means first): (+33.3 + 16.7 - 16.7) / 3
    assert (
        spread.mean == pytest.approx(100 / 9) == pytest.approx(sum((pooled[q] - st[q]) * 100 for q in st) / 3)
    )


def test_spread_keeps_the_registered_subset_and_refuses_unrepeated_tests():
    from harness.plan.model import Subset

    st = {"a1": 0.0, "b1": 0.0}
    r0, r1 = {"a1": 1.0, "b1": 0.0}, {"a1": 0.0, "b1": 0.5}
    table = pd.DataFrame(_rows("S+T", st) + _rows("E-rep", {q: (r0[q] + r1[q]) / 2 for q in st}))
    variants = pd.DataFrame(_rows("E-rep@r0", r0) + _rows("E-rep@r1", r1))
    # a one-cluster sample of two clusters; whichever is drawn, each repeat is measured on it alone
    test = _test("R", "E-rep", "S+T", subset=Subset(n_clusters=1, seed=7))
    spread = repeat_spread(pd.concat([table, variants]), test, {"E-rep": ["r0", "r1"]})
    assert spread.n_questions == 1
    assert spread.estimates in ((100.0, 0.0), (0.0, 50.0))
    plain = _test("P", "S+T", "S+T")
    with pytest.raises(HarnessError, match="neither S\\+T nor S\\+T has repeated generations"):
        repeat_spread(pd.concat([table, variants]), plain, {"E-rep": ["r0", "r1"]})


# --- freeze: the paraphrase is a frozen input ---


def test_editing_the_paraphrased_prompt_is_drift(tmp_path, monkeypatch):
    from provenance_support import (
        FakeDigests,
        install_fake_digests,
        make_study as make_frozen_study,
        model_keys,
    )
    from harness.errors import DriftError
    from harness.provenance.drift import check_frozen
    from harness.provenance.freeze import freeze
    from harness.study import Study

    digests = FakeDigests()
    install_fake_digests(monkeypatch, digests)
    root = make_frozen_study(tmp_path / "study")
    for i, key in enumerate(model_keys(root / "configs" / "study.yaml")):
        digests[key] = f"sha256:{i:064d}"
    para = root / "prompts" / "enrich_paraphrase.txt"
    para.write_text((root / "prompts" / "enrich.txt").read_text(encoding="utf-8").replace("chunk", "passage"),
                    encoding="utf-8")
    freeze(Study.at(root))
    para.write_text(para.read_text(encoding="utf-8") + " ", encoding="utf-8")
    with pytest.raises(DriftError, match=r'input_files\["prompts/enrich_paraphrase\.txt"\]'):
        check_frozen(Study.at(root), stage="build-arms", note=lambda text: None)


def test_the_shipped_paraphrase_asks_for_the_same_fields_in_other_words():
    from pathlib import Path

    from harness.arms.enrich import ENRICH_SCHEMA
    from harness.llm.prompts import PromptTemplate

    prompts = Path(__file__).resolve().parents[1] / "examples" / "demo" / "prompts"
    original, para = (
        PromptTemplate.load(prompts, "enrich.txt"),
        PromptTemplate.load(prompts, "enrich_paraphrase.txt"),
    )
    assert sorted(para.placeholders) == sorted(original.placeholders)
    for field in ENRICH_SCHEMA["required"]:
        assert f'"{field}"' in para.text
    shared = set(original.text.splitlines()) & set(para.text.splitlines())
    assert shared <= {"", "<<<", ">>>", "{chunk_text}", "{key_dictionary}"}  # reworded, line by line


# --- the report section ---


def _report_ctx(tmp_path, table: pd.DataFrame):
    from harness.files import atomic_write_json

    study = SimpleNamespace(
        arms={"S+T": SimpleNamespace(kind="S+T", datasets=None),
              "E-rep": SimpleNamespace(kind="E", repeats=2, datasets=("papers",))},
        datasets={"papers": {}}, config=SimpleNamespace(datasets={"papers": SimpleNamespace()}),
        root=tmp_path, results_root=None, config_path=tmp_path / "configs" / "study.yaml")
    test = _test("R-rep", "E-rep", "S+T")
    plan = SimpleNamespace(families=[SimpleNamespace(id="robustness", tests=[test])])
    ctx = SimpleNamespace(study=study, outcomes=(True, []), plan=plan, frozen_hash=None, per_question=table)
    return ctx, atomic_write_json


def test_report_section_names_what_is_missing_then_shows_the_spread(tmp_path):
    from harness.pipeline.parts import write_variants_part
    from harness.grid.results import ResultRow
    from harness.report.sections_robustness import repeat_generations
    from harness.stats.families import FamilyResult, Status

    st = {"a1": 0.5, "a2": 0.0, "b1": 1.0}
    r0 = {"a1": 1.0, "a2": 0.5, "b1": 1.0}
    r1 = {"a1": 0.5, "a2": 0.0, "b1": 0.5}
    table = pd.DataFrame(_rows("S+T", st) + _rows("E-rep", {q: (r0[q] + r1[q]) / 2 for q in st}))
    ctx, write_json = _report_ctx(tmp_path, table)

    blocked = repeat_generations(ctx)
    said = {m.sentence() for m in blocked.missing}
    assert "Missing: repeated chunk sets papers/E-rep; run `make build-arms`." in said
    assert "Missing: statistics of family robustness (robustness.json); run `make stats`." in said
    assert "Missing: per-repeat results of papers/E-rep/hybrid; run `make score`." in said
    assert not blocked.tables

    rows = [ResultRow(**r) for r in _rows("E-rep@r0", r0) + _rows("E-rep@r1", r1)]
    write_variants_part(tmp_path / "results" / "per_question", "papers", "E-rep", "hybrid", rows)
    family = FamilyResult(
        family="robustness", description="", tier="exploratory", multiplicity="none", rule="tost",
        signflip_required=False, alpha=0.05, seed=1, resamples=1000, max_flips=1000, source="plan", n_tests=1,
        study="s", harness_version="0", status=Status.RAN, missing=(),
        rows=(_decided("R-rep", estimate=25 / 3, ci95=(-10.0, 30.0)),))
    write_json(tmp_path / "results" / "stats" / "robustness.json", family.to_json())
    (tmp_path / "results" / "chunks" / "papers").mkdir(parents=True)
    (tmp_path / "results" / "chunks" / "papers" / "E-rep.jsonl").write_text("", encoding="utf-8")
    write_json(tmp_path / "results" / "chunks" / "papers" / "E-rep.manifest.json", {"llm": {"per_repeat": {
        name: {"seeds": seeds, "chunks": 3, "failures": 0, "retries": 1,
               "calls": {"calls": 4, "fresh_calls": fresh, "cache_hits": 4 - fresh}}
        for name, seeds, fresh in (("r0", [0, 1], 0), ("r1", [1000, 1001], 4))}}})
    shown = repeat_generations(ctx)
    assert not shown.missing
    runs, spread = shown.tables
    assert runs.name == "repeat-runs" and [r[2:4] for r in runs.rows] == [
        ("r0", "0, 1"),
        ("r1", "1000, 1001"),
    ]
    assert spread.name == "repeat-spread"
    # r0: +50, +50, 0 -> +33.3; r1: 0, 0, -50 -> -16.7; SD = |33.3 + 16.7| / sqrt(2) = 35.36
    assert spread.rows == (("R-rep", "papers", "E-rep - S+T", "rec@512t", "3", "r0 +33.3; r1 -16.7", "35.36",
                            "[-16.7, +33.3]", "+8.3", "[-10.0, 30.0]"),)
