"""Moved to harness.files (the lowest layer, so the data model can use it without an import cycle).

This alias only keeps branches written before the move importable; new code imports harness.files.
"""

from harness.files import *  # noqa: F401,F403
from harness.files import __all__  # noqa: F401
