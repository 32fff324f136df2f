import sys

from harness.cli.main import main

if (
    __name__ == "__main__"
):  # spawned worker processes (e.g. the known-effects replicates) import this module too
    sys.exit(main())
