"""Statistics: BCa cluster bootstrap, TOST, cluster sign-flip, Holm, verdicts (docs/design.md, Paired
differences, and the sections after it).

Statistical functions return results only; Holm and verdicts are applied later, by `families`, from the
plan (`plan.yaml` plus amendments).
"""

from harness.stats.bootstrap import BootstrapResult, cluster_bootstrap
from harness.stats.contrast import ContrastResult, compare, paired_differences
from harness.stats.holm import holm
from harness.stats.signflip import SignFlipResult, cluster_sign_flip
from harness.stats.tost import TostResult, tost

__all__ = [
    "BootstrapResult",
    "ContrastResult",
    "SignFlipResult",
    "TostResult",
    "cluster_bootstrap",
    "cluster_sign_flip",
    "compare",
    "holm",
    "paired_differences",
    "tost",
]
