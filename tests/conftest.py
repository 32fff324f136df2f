"""Fixtures every test module may use.

`built_once` builds an expensive input (a scored study, say) once per test run, whatever the number of
pytest-xdist workers: the first worker to ask builds it under a file lock in the run's shared temporary
folder and the others wait and read it. What it returns is read-only by convention: a test that writes
copies it first. `built_demo` is the demo study, built and scored that way.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

# Under pytest-xdist each worker gives llama.cpp its share of the cores: llama.cpp's threads spin while they
# wait, so workers that each use every core slow one another several-fold (harness.llm.llamacpp_backend).
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _share = (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    os.environ.setdefault("HARNESS_LLAMA_THREADS", str(max(1, _share)))

# The suite's studies are scratch copies: their writes stay atomic but skip the flush to disk (fsync); the
# quick loop alone made about 14,000 flushes, tens of seconds of waiting (harness.files.durable_writes).
# Tests of the flush itself set HARNESS_FSYNC=1.
os.environ.setdefault("HARNESS_FSYNC", "0")

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo"


def _shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's base temporary folder, common to every xdist worker (each worker's own is a child of it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def built_once(tmp_path_factory) -> Callable[[str, Callable[[Path], None]], Path]:
    root = _shared_root(tmp_path_factory) / "built-once"
    root.mkdir(exist_ok=True)

    def get(name: str, build: Callable[[Path], None]) -> Path:
        target, done = root / name, root / f"{name}.done"
        with open(root / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            if not done.is_file():
                if target.exists():  # a build that raised in another worker: start again
                    shutil.rmtree(target)
                target.mkdir()
                build(target)
                done.touch()
        return target

    return get


SHIPPED_OUTPUTS = {"generations", "embeddings"}  # the model outputs a clone of the demo receives


def _outputs_of_a_local_run(folder: str, names: list[str]) -> set[str]:
    """What a developer's own `make demo` left under examples/demo/results, besides the shipped caches."""
    return set(names) - SHIPPED_OUTPUTS if Path(folder) == DEMO / "results" else set()


@pytest.fixture(scope="session")
def built_demo(built_once) -> Path:
    """A copy of the demo study (examples/demo) with every chunk set built and every cell scored: run files
    and per-question tables, no statistics. Built once per test run (minutes); read-only."""
    from harness.cli.main import main  # conftest loads harness code only for a fixture that needs it

    def build(root: Path) -> None:
        shutil.copytree(DEMO, root / "demo", ignore=_outputs_of_a_local_run)
        for stage in ("build-arms", "score"):
            assert main([stage, "--study", str(root / "demo"), "--quiet"]) == 0, stage

    return built_once("demo-scored", build) / "demo"


@pytest.fixture
def git_identity(monkeypatch):
    """Who commits, for tests that make a study a git repository (the machine may have no identity)."""
    for key in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{key}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{key}_EMAIL", "test@example.org")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under `--dist loadgroup`, the tests that share a module-scoped fixture (a built study, a loaded model)
    run in one worker, so the fixture is built once; every other test goes wherever a worker is free.
    The long tests (marked `slow` or `llm`) are handed out first: one started last would leave the other
    workers idle while it runs."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)  # pytest's resolved fixtures of the test
        closest = [defs[-1] for defs in info.name2fixturedefs.values() if defs] if info else []
        if any(d.scope == "module" for d in closest):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
    items.sort(key=lambda item: not (item.get_closest_marker("slow") or item.get_closest_marker("llm")))
