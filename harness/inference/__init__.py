"""The pure statistics: BCa cluster bootstrap, cluster sign-flip, TOST and t-TOST, Holm, power, group means
and synthetic draws, as functions of arrays (docs/design.md, Paired differences, and the sections after it).

Nothing here knows a plan, a study or a file: harness.stats pairs the per-question results into the arrays
these read and decides the plan's families from what they return.
"""

from harness.inference.bootstrap import BootstrapResult, cluster_bootstrap
from harness.inference.holm import holm
from harness.inference.signflip import SignFlipResult, cluster_sign_flip
from harness.inference.tost import TostResult, tost

__all__ = [
    "BootstrapResult",
    "SignFlipResult",
    "TostResult",
    "cluster_bootstrap",
    "cluster_sign_flip",
    "holm",
    "tost",
]
