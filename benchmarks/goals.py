"""What every benchmark shares: the --quick flag and the one way a goal is printed.

`--quick` runs the benchmark at tiny sizes in seconds, so a test (tests/test_benchmarks.py) can run every
script and a broken one fails CI; its figures then say nothing about speed. A goal prints as
`goal: <what>: met` or `NOT met`; a missed goal is a figure, not an error, so `make bench` goes on.
"""

from __future__ import annotations

import argparse

QUICK_HELP = "tiny sizes, seconds: checks that the benchmark runs (its figures then mean nothing)"


def add_quick(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help=QUICK_HELP)


def goal(what: str, met: bool, detail: str = "", *, quick: bool = False) -> bool:
    """Print one goal as met / NOT met (with the measured figure in `detail`); returns `met`."""
    suffix = f" ({detail})" if detail else ""
    note = " [quick run: sizes too small to judge]" if quick else ""
    print(f"goal: {what}: {'met' if met else 'NOT met'}{suffix}{note}")
    return met
