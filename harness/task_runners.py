"""How a stage's module-level tasks run away from the loop that would run them one after another: in fresh
processes of this machine (run_in_processes) or as Ray tasks (ray_session, run_on_ray).

Nothing here knows a stage or the statistics: `score` and `stats` each pass their own module-level task
function (Ray ships it by reference) and the arguments of every task, and which runner a stage uses is
chosen above (harness.pipeline.executors). A task runs the same code the local loop runs and its result is
keyed by the caller's name for it, so outputs do not depend on the number of workers or the completion order
(tests/test_pipeline_executors.py).

Ray workers read the study directory by path: on a cluster it must be on storage every node mounts at the
same path, or shipped with the job (docs/scale-out.md, "The grid on Ray"). Ray is an optional extra
(`pip install -e '.[ray]'`); the local executor needs nothing new.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Callable, Hashable, Iterator, Mapping, Sequence, TypeVar

from harness.config.executor import Executor
from harness.errors import HarnessError

RAY_HINT = "pip install -e '.[ray]' (the pinned Ray release)"
# the caller's name for a task: results come back under it
Key = TypeVar("Key", bound=Hashable)


@contextlib.contextmanager
def ray_session(executor: Executor) -> Iterator[Any]:
    """Connect to `ray_address`, or start a local instance with `workers` CPUs; shut down what we started."""
    try:
        import ray
    except ImportError:
        raise HarnessError(f"the ray executor needs Ray: {RAY_HINT}") from None
    if ray.is_initialized():  # a caller (a test, a notebook) already chose the cluster
        yield ray
        return
    if executor.ray_address:
        ray.init(address=executor.ray_address, log_to_driver=False)
    else:
        # local workers import this very harness (a worktree or checkout may shadow the installed one)
        here = str(Path(__file__).resolve().parents[1])
        path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
        ray.init(num_cpus=executor.workers, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": path}})
    try:
        yield ray
    finally:
        ray.shutdown()


def run_in_processes(
    task: Callable[..., Any], calls: Mapping[Key, Sequence[Any]],
    on_done: Callable[[Key, Any, int], None],
    *, workers: int,
) -> dict[Key, Any]:
    """run_on_ray's contract on `workers` fresh processes of this machine (spawned, not forked: the parent may
    hold threads and open models). Tasks start in the order of `calls`; the first task that fails cancels the
    ones not started and raises its error here."""
    import concurrent.futures
    import multiprocessing

    results: dict[Key, Any] = {}
    if not calls:
        return results
    processes = min(workers, len(calls))
    spawn = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(processes, mp_context=spawn) as pool:
        pending = {pool.submit(task, *arguments): key for key, arguments in calls.items()}
        try:
            for future in concurrent.futures.as_completed(pending):
                key = pending[future]
                results[key] = future.result()
                on_done(key, results[key], len(results))
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return results


def run_on_ray(
    ray: Any, task: Callable[..., Any], calls: Mapping[Key, Sequence[Any]],
    on_done: Callable[[Key, Any, int], None],
) -> dict[Key, Any]:
    """`task(*arguments)` as one Ray task per entry of `calls`, all submitted at once; returns {key: result}.
    Each result is reported to `on_done(key, result, how many are done)` as it completes."""
    remote = ray.remote(task)
    pending = {remote.remote(*arguments): key for key, arguments in calls.items()}
    results: dict[Key, Any] = {}
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        key = pending.pop(done[0])
        results[key] = ray.get(done[0])  # a failed task raises here, naming its error
        on_done(key, results[key], len(results))
    return results
