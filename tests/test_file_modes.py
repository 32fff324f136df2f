"""Files the harness writes get the mode open() would give them (0666 less the umask), not mkstemp's 0600."""

from __future__ import annotations

import os
import stat

import pytest

from harness.files import atomic_write_json, atomic_write_text


@pytest.mark.parametrize("umask, expected", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_an_atomic_write_follows_the_umask(tmp_path, umask, expected):
    before = os.umask(umask)
    try:
        atomic_write_text(tmp_path / "report.md", "# report\n")
        atomic_write_json(tmp_path / "nested" / "record.json", {"a": 1})
    finally:
        os.umask(before)
    for path in (tmp_path / "report.md", tmp_path / "nested" / "record.json"):
        assert stat.S_IMODE(path.stat().st_mode) == expected, path
