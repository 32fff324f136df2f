"""User-facing errors: the CLI prints their message and exits with their code, never a traceback."""


class HarnessError(Exception):
    """A problem the user can fix (bad input, missing file, bad config). Exit code 1."""

    exit_code = 1


class DriftError(HarnessError):
    """The current inputs differ from frozen_config.json. Exit code 2."""

    exit_code = 2


class InputError(HarnessError, ValueError):
    """A malformed input record; the message names the file and the record."""

    def __init__(self, message: str, *, path=None, record=None):
        where = ""
        if path is not None:
            where = f"{path}"
            if record is not None:
                where += f" (record {record})"
            where += ": "
        super().__init__(where + message)
        self.path = path
        self.record = record
