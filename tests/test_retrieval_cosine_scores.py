"""harness.retrieval.dense.cosine_scores: every score is the rounding of the correctly rounded sum of its
products, so batches, BLAS threads and summation order cannot move it (docs/determinism.md)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from harness.retrieval.dense import SCORE_DECIMALS, cosine_scores

ROOT = Path(__file__).resolve().parents[1]


def exact(q: np.ndarray, row: np.ndarray) -> float:
    return float(np.round(math.fsum((q * row).tolist()), SCORE_DECIMALS)) + 0.0


def near_midpoints(rng: np.random.Generator, q: np.ndarray, n: int) -> np.ndarray:
    """Unit rows whose cosine with q is (k + 0.5) / 10**6 up to float error: where summation order shows."""
    rows = []
    for _ in range(n):
        target = (int(rng.integers(-999_999, 999_999)) + 0.5) / 10.0**SCORE_DECIMALS
        noise = rng.standard_normal(len(q))
        noise -= (noise @ q) * q
        noise /= np.linalg.norm(noise)
        rows.append(target * q + math.sqrt(1 - target * target) * noise)
    return np.array(rows)


def unit(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    x = rng.standard_normal(shape)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_scores_next_to_a_rounding_midpoint_are_the_exact_sums_rounding():
    rng = np.random.default_rng(7)
    queries = unit(rng, (20, 256))
    differs_plainly = 0
    for q in queries:
        rows = near_midpoints(rng, q, 200)
        got = cosine_scores(q[None, :], rows)[0]
        want = np.array([exact(q, r) for r in rows])
        assert (got == want).all()
        differs_plainly += int((np.round(rows @ q, SCORE_DECIMALS) + 0.0 != want).sum())
    assert differs_plainly > 0  # the rows do reach the cases a plain rounded product gets wrong


def test_a_query_scores_the_same_alone_or_in_any_batch():
    rng = np.random.default_rng(1)
    matrix, queries = unit(rng, (500, 64)), unit(rng, (70, 64))
    together = cosine_scores(queries, matrix)
    alone = np.array([cosine_scores(q[None, :], matrix)[0] for q in queries])
    reversed_batch = cosine_scores(queries[::-1], matrix)[::-1]
    assert together.tobytes() == alone.tobytes() == reversed_batch.tobytes()
    assert (np.round(together, SCORE_DECIMALS) == together).all()


def test_negative_zero_is_written_as_zero():
    q = np.array([[1.0, 0.0]])
    scores = cosine_scores(q, np.array([[-0.0, 1.0], [0.0, -1.0]]))
    assert (scores == 0).all() and not np.signbit(scores).any()


def test_blas_thread_counts_give_the_same_bytes(tmp_path):
    script = (
        "import sys, numpy as np\n"
        "from harness.retrieval.dense import cosine_scores\n"
        "rng = np.random.default_rng(3)\n"
        "m = rng.standard_normal((3000, 256)); m /= np.linalg.norm(m, axis=1, keepdims=True)\n"
        "q = rng.standard_normal((64, 256)); q /= np.linalg.norm(q, axis=1, keepdims=True)\n"
        "sys.stdout.write(cosine_scores(q, m).tobytes().hex())\n"
    )
    outputs = []
    for threads in ("1", "2"):
        env = os.environ | {
            v: threads for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
        }
        outputs.append(subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True,
                                      text=True, check=True).stdout)
    assert outputs[0] and outputs[0] == outputs[1]
