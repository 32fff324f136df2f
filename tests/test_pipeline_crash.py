"""Issue 23, case 6: a `score` killed midway leaves no short manifest and no temporary file behind.

The crash is injected deterministically in a subprocess: `os.replace` of the third done marker calls
os._exit (no cleanup runs, as under kill -9), after its temporary file was written."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from harness.cli.main import main
from harness.files import read_json
from pipeline_support import make_llm_free_study

KILL_AT_THIRD_MARKER = textwrap.dedent("""
    import os, sys
    import harness.files as files
    real, seen = os.replace, []

    def replace(src, dst):
        if str(dst).endswith(".done.json"):
            seen.append(dst)
            if len(seen) == 3:
                os._exit(137)  # like kill -9: the temporary stays, nothing is cleaned up
        return real(src, dst)

    files.os.replace = replace
    from harness.cli.main import main
    sys.exit(main(["score", "--study", sys.argv[1], "--no-progress"]))
""")


def _temporaries(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.tmp"))


def test_issue23_case6_a_killed_score_resumes_with_every_cell_count_and_no_temporary(tmp_path):
    killed, whole = tmp_path / "killed", tmp_path / "whole"
    for root in (killed, whole):
        make_llm_free_study(root)
        assert main(["build-arms", "--study", str(root), "--no-progress"]) == 0
    crash = subprocess.run(
        [sys.executable, "-c", KILL_AT_THIRD_MARKER, str(killed)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert crash.returncode == 137, crash.stderr
    assert len(_temporaries(killed / "results")) == 1  # the third marker's, written but never renamed
    assert main(["score", "--study", str(killed), "--no-progress"]) == 0
    assert main(["score", "--study", str(whole), "--no-progress"]) == 0
    assert _temporaries(killed / "results") == []
    for name in ("papers", "papers-pooled", "docs"):
        for suffix in ("parquet", "csv"):
            got = (killed / f"results/per_question/{name}.{suffix}").read_bytes()
            assert got == (whole / f"results/per_question/{name}.{suffix}").read_bytes(), (name, suffix)
        manifest = read_json(killed / f"results/per_question/{name}.manifest.json")
        expected = read_json(whole / f"results/per_question/{name}.manifest.json")
        assert sorted(manifest["cell_counts"]) == sorted(expected["cell_counts"]) == sorted(
            f"{name}/{c.replace('__', '/')}" for c in expected["cells"])
        assert manifest == expected


def test_only_a_dead_writers_temporary_is_removed(tmp_path):
    import socket

    from harness.files import remove_stale_temporaries

    host = socket.gethostname()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    files = {
        "dead": tmp_path / f"a/.x.json.tmp-{host}-{int(dead.stdout)}-abc123.tmp",
        "alive": tmp_path / f".y.json.tmp-{host}-{os.getpid()}-abc123.tmp",
        "other_host": tmp_path / f".z.json.tmp-elsewhere-{int(dead.stdout)}-abc123.tmp",
        "link_form": tmp_path / f".FIRST_OUTCOME.json.{int(dead.stdout)}.tmp",
        "not_ours": tmp_path / "notes.tmp",
    }
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    assert remove_stale_temporaries(tmp_path) == sorted([files["dead"], files["link_form"]])
    assert sorted(p.name for p in tmp_path.rglob("*.tmp")) == sorted(
        files[k].name for k in ("alive", "other_host", "not_ours"))
