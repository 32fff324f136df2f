"""t-TOST: a cluster-robust t interval and its TOST p, the sensitivity column beside the bootstrap TOST.

Never a decision input: verdicts come from the bootstrap TOST alone; this column shows whether a parametric
reading of the same contrast agrees.

Definition. The estimate is the row's point estimate, the question-weighted mean difference
sum_c S_c / N (S_c: cluster c's sum of paired differences, n_c its questions, N = sum n_c), as the
bootstrap weights questions. Its variance is the cluster-robust one of that ratio: with
u_c = (S_c - n_c * estimate) / N, each stratum h with C_h clusters contributes
C_h / (C_h - 1) * sum_{c in h} (u_c - mean_h u)^2 (a stratum of one cluster contributes 0), and the
variance is the sum over strata (harness.inference.power.cluster_standard_error). Unstratified, this is
exactly statsmodels' intercept-only OLS of the question differences with cluster-robust (CR1) covariance,
G / (G - 1) * sum_c (S_c - n_c * estimate)^2 / N^2 (its (N - 1) / (N - K) factor is 1 with K = 1).
Degrees of freedom: clusters - strata (G - 1 unstratified). With SE > 0 and df >= 1:

    p_lower = P(T_df >= (estimate + margin) / SE)      H0: difference <= -margin
    p_upper = P(T_df >= (margin - estimate) / SE)      H0: difference >= +margin
    p_tost_t = max(p_lower, p_upper);  90% interval: estimate -/+ t_{0.95, df} * SE

With SE = 0 (every cluster has the same mean difference) the interval is the estimate and each one-sided
p is 0 or 1 as the estimate lies inside or outside the margin, as the bootstrap TOST treats a degenerate
bootstrap. With df < 1 (one cluster per stratum) there is no t distribution: the interval and the p's are
None, and the row's t_df says why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.stats import t as student_t

LEVEL = 0.90  # the interval shown beside the 90% BCa interval of a TOST row


@dataclass(frozen=True)
class TTostResult:
    df: int
    ci90: tuple[float, float] | None  # None when df < 1
    p_lower: float | None
    p_upper: float | None
    p_tost: float | None


def t_tost(estimate: float, se: float, *, n_clusters: int, n_strata: int, margin: float) -> TTostResult:
    """The t-TOST of a contrast with cluster standard error `se` (points) against +-`margin`."""
    if not (margin > 0 and math.isfinite(margin)):
        raise ValueError(f"`margin` must be a positive number; got {margin!r}")
    if not (se >= 0 and math.isfinite(se)):
        raise ValueError(f"`se` must be a finite number >= 0; got {se!r}")
    df = int(n_clusters) - int(n_strata)
    if df < 1:
        return TTostResult(df=df, ci90=None, p_lower=None, p_upper=None, p_tost=None)
    if se == 0:
        p_lower = 0.0 if estimate > -margin else 1.0
        p_upper = 0.0 if estimate < margin else 1.0
        ci = (float(estimate), float(estimate))
    else:
        p_lower = float(student_t.sf((estimate + margin) / se, df))
        p_upper = float(student_t.sf((margin - estimate) / se, df))
        half = float(student_t.ppf(1 - (1 - LEVEL) / 2, df)) * se
        ci = (float(estimate - half), float(estimate + half))
    return TTostResult(df=df, ci90=ci, p_lower=p_lower, p_upper=p_upper, p_tost=max(p_lower, p_upper))


def disagrees(p_tost: float | None, p_tost_t: float | None, alpha: float) -> bool | None:
    """Whether the bootstrap TOST and the t-TOST differ about equivalence at `alpha`, both unadjusted (Holm
    does not apply to a sensitivity column); None when either p is absent."""
    if p_tost is None or p_tost_t is None:
        return None
    return (p_tost < alpha) != (p_tost_t < alpha)
