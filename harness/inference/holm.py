"""Holm step-down adjustment within one family (docs/design.md, Families and Holm)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def holm(pvalues: ArrayLike) -> np.ndarray:
    """Holm-adjusted p-values, in the input order: monotone in the sorted order and capped at 1.

    Equal p-values keep their input order (stable sort), so the result does not depend on dict order.
    """
    p = _holm_iv(pvalues)
    m = len(p)
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


def _holm_iv(pvalues: ArrayLike) -> np.ndarray:
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"`pvalues` must be 1-D; got shape {p.shape}")
    bad = ~((p >= 0) & (p <= 1))
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"`pvalues` must lie in [0, 1]; position {i} is {p[i]!r}")
    return p
