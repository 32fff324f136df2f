"""The synthetic twin of a study: its plan, amendments, prompts, arms, retrievers, budgets, families and
seeds, with simulated data (harness.rehearsal.twin_data) and stand-in models.

The twin is a study directory of its own (a separate git repository, so its plan is registered there and
its outcomes are its own): nothing is written into the study, and no result of the study is read.
What is swapped, and how, is fixed here:
  - every `models:` entry becomes `backend: simulated` under the same entry name and model name, keeping
    its seed, temperature, output cap, context window and prices (so the estimate and the spend cap see
    the same numbers); the arms', reader's and judge's `model_options` are renamed the same way;
  - every retriever whose spec declares a stand-in (dense encoders, rerankers) becomes it: a hashed n-gram
    stand-in (`backend: simulated`), unless `real_encoders` keeps them; an LLM reranker (`llm-yes`) always
    becomes the stand-in, its model being simulated;
  - `datasets:` points at the simulated files (no `source:` blocks: nothing is fetched).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any, Mapping

import yaml

from harness.config.arms import documents_of
from harness.config.plugin_code import PLUGINS_FOLDER
from harness.config.retrievers import retriever_spec
from harness.errors import HarnessError
from harness.files import atomic_write_json, atomic_write_text, canonical_json, read_json, sha256_file
from harness.rehearsal.twin_data import write_twin_datasets
from harness.plan.load import load_study_plan
from harness.study import Study

# configs/study.yaml is rewritten, results never copied; plugins/: the study's own chunkers and retrievers
COPIED = ("plan", "amendments", "prompts", "selection", PLUGINS_FOLDER)
NOT_COPIED = ("selection.json",)  # the twin draws its own selection from its own data
MARKER = "REHEARSAL.json"  # what the twin was made from: a rerun into the same folder resumes
REGISTERED = ("plan", "amendments", "configs", "prompts")
_GIT_IDENTITY = ("-c", "user.name=harness rehearse", "-c", "user.email=rehearse@localhost")
# another backend's option -> the simulated model's: what moves the estimate and the spend cap carries over,
# the rest (reasoning effort, repeat penalty, ...) cannot change a stand-in's answer and is dropped
SIMULATED_OPTION = {
    "max_tokens": "max_tokens",
    "num_predict": "max_tokens",
    "context_tokens": "context_tokens",
    "num_ctx": "context_tokens",
    "n_ctx": "context_tokens",
    "temperature": "temperature",
    "seed": "seed",
    "retry_temperature": "retry_temperature",
}
_PRICES = ("price_in_per_mtok", "price_out_per_mtok")
_OPTION_SECTIONS = ("reader", "judge")  # sections with `model_options` besides the arms


def simulated_model(entry: Mapping[str, Any], *, malformed_rate: float) -> dict[str, Any]:
    """A `models:` entry as its simulated stand-in (the model's name keeps keying the cache)."""
    name = entry.get("name") or entry.get("package") or Path(str(entry.get("model_path", "model"))).name
    out: dict[str, Any] = {"backend": "simulated", "name": str(name)}
    out |= simulated_options({k: v for k, v in entry.items() if v is not None})
    out |= {k: entry[k] for k in _PRICES if entry.get(k) is not None}
    return out | ({"malformed_rate": malformed_rate} if malformed_rate else {})


def simulated_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Model options (an entry's, or an arm's `model_options`, per-dataset values kept) in the simulated
    model's names."""
    return {SIMULATED_OPTION[k]: v for k, v in options.items() if k in SIMULATED_OPTION}


def _with_simulated_options(section: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(section.get("model_options"), Mapping):
        return dict(section)
    return dict(section) | {"model_options": simulated_options(section["model_options"])}


def simulated_retriever(entry: Mapping[str, Any], *, real_encoders: bool) -> dict[str, Any]:
    """A `retrievers:` entry as the twin runs it: a type with a stand-in (encoders, rerankers) becomes it."""
    stand_in = retriever_spec(entry).stand_in
    if stand_in is not None and (not real_encoders or stand_in.always):
        return stand_in.entry(entry)
    return dict(entry)


def sampled_clusters(study: Study) -> dict[str, int]:
    """dataset -> the most clusters any registered subset or arm's document sample draws from it."""
    need: dict[str, int] = {}
    for family in load_study_plan(study).families:
        for test in family.tests:
            if test.subset is not None and test.subset.n_clusters is not None:
                need[test.dataset] = max(need.get(test.dataset, 0), test.subset.n_clusters)
    for arm in study.arms.values():
        documents = documents_of(arm)
        if isinstance(documents, int):
            for dataset in getattr(arm, "datasets", None) or study.config.datasets:
                need[dataset] = max(need.get(dataset, 0), documents)
    return need


def without_sources(datasets: Mapping[str, Any]) -> dict[str, Any]:
    """The twin's data is written locally: the study's `source:` blocks (hub ids, URLs, commits) do not
    apply."""
    out = {}
    for name, entry in datasets.items():
        entry = {k: v for k, v in entry.items() if k != "source"}
        if isinstance(entry.get("domains"), Mapping):
            entry["domains"] = {
                d: {k: v for k, v in spec.items() if k != "source"} for d, spec in entry["domains"].items()
            }
        out[name] = entry
    return out


def twin_settings(study: Study, *, scale: str, seed: int, real_encoders: bool, malformed_rate: float) -> dict:
    return {
        "study": str(study.root),
        "study_config_sha256": sha256_file(study.config_path),
        "scale": scale,
        "seed": seed,
        "real_encoders": real_encoders,
        "malformed_rate": malformed_rate,
    }


def make_twin(study: Study, out: Path, *, scale: str, seed: int, real_encoders: bool = False,
              malformed_rate: float = 0.0) -> Study:
    """Write the twin into `out` (or reuse the twin already there, made with the same settings)."""
    out = out.resolve()
    _refuse_inside(study, out)
    settings = twin_settings(
        study, scale=scale, seed=seed, real_encoders=real_encoders, malformed_rate=malformed_rate
    )
    marker = out / MARKER
    if marker.is_file():
        made = read_json(marker)
        if made != settings:
            raise HarnessError(f"{out} holds a twin made with other settings ({canonical_json(made)}); "
                               "give another --out or delete it")
        return Study.at(out)
    if out.exists() and any(out.iterdir()):
        raise HarnessError(
            f"{out} is not empty and holds no rehearsal ({MARKER} missing); give an empty or new folder"
        )
    out.mkdir(parents=True, exist_ok=True)
    for folder in COPIED:
        source = study.root / folder
        if source.is_dir():
            shutil.copytree(source, out / folder, ignore=shutil.ignore_patterns(*NOT_COPIED, "__pycache__"))
    raw = dict(study.raw_config)
    raw["datasets"] = without_sources(
        write_twin_datasets(
            study.config, study.root, out, scale=scale, seed=seed, min_clusters=sampled_clusters(study)
        )
    )
    raw["models"] = {name: simulated_model(entry, malformed_rate=malformed_rate)
                     for name, entry in (raw.get("models") or {}).items()}
    raw["retrievers"] = {name: simulated_retriever(entry, real_encoders=real_encoders)
                         for name, entry in (raw.get("retrievers") or {}).items()}
    raw["arms"] = {name: _with_simulated_options(arm) for name, arm in (raw.get("arms") or {}).items()}
    raw |= {
        key: _with_simulated_options(raw[key])
        for key in _OPTION_SECTIONS
        if isinstance(raw.get(key), Mapping)
    }
    (out / "configs").mkdir(exist_ok=True)
    atomic_write_text(
        out / "configs" / "study.yaml",
        "# the synthetic twin written by `harness rehearse`: simulated data and stand-in models\n"
        + yaml.safe_dump(raw, sort_keys=False, allow_unicode=True),
    )
    _register(out)
    atomic_write_json(marker, settings)
    return Study.at(out)


def _register(root: Path) -> None:
    """The twin's own git repository, its plan and config committed: the registration its audit checks."""
    def git(*args: str) -> None:
        done = subprocess.run(["git", *_GIT_IDENTITY, *args], cwd=root, capture_output=True, text=True)
        if done.returncode != 0:
            raise HarnessError(f"git {' '.join(args)} in {root} failed: {done.stderr.strip()}")

    git("init", "-q")
    git("add", "--", *[f for f in REGISTERED if (root / f).exists()])
    git("commit", "-q", "-m", "Register the rehearsal twin's plan and config")


def _refuse_inside(study: Study, out: Path) -> None:
    root = study.root.resolve()
    if out == root or root in out.parents:
        raise HarnessError(
            f"--out {out} is inside the study {root}; the rehearsal writes nothing into the study "
            "(give a folder outside it, e.g. /tmp/rehearsal)"
        )

