"""How many threads the embedded llama.cpp model gets: every core unless HARNESS_LLAMA_THREADS says."""

from __future__ import annotations

import os

import pytest

from harness.errors import HarnessError
from harness.llm.llamacpp_backend import THREADS_ENV, llama_threads


def test_every_core_unless_the_environment_names_a_count(monkeypatch):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    assert llama_threads() == (os.cpu_count() or 1)
    monkeypatch.setenv(THREADS_ENV, "3")
    assert llama_threads() == 3


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_a_count_that_is_not_a_whole_number_of_threads_is_refused_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv(THREADS_ENV, value)
    with pytest.raises(HarnessError, match=THREADS_ENV):
        llama_threads()


def test_the_suites_workers_share_the_cores():
    """tests/conftest.py: under pytest-xdist (as `make test` runs) each worker's llama.cpp gets
    cores // workers threads, at least 1."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers is None:
        pytest.skip("the share is set only under pytest-xdist")
    assert llama_threads() == max(1, (os.cpu_count() or 1) // int(workers))
