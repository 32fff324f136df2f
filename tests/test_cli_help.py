"""The CLI explains itself: `harness --help` states the exit codes, and a mistyped command is answered with
the closest command's name instead of argparse's list of every choice."""

from __future__ import annotations

import pytest

from harness.cli.main import main


def test_help_states_every_exit_code(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "exit codes" in out
    for code in ("0", "1", "2", "3", "130"):
        assert f"\n  {code} " in out, code


@pytest.mark.parametrize("typed, meant", [("scroe", "score"), ("stat", "stats"), ("buildarms", "build-arms")])
def test_a_mistyped_command_gets_the_closest_name(capsys, typed, meant):
    assert main([typed, "--study", "."]) == 2
    err = capsys.readouterr().err
    assert f"{typed!r} is not a command; did you mean `harness {meant}`?" in err


def test_a_word_like_no_command_gets_no_guess(capsys):
    assert main(["zzzzqqq"]) == 2
    err = capsys.readouterr().err
    assert "'zzzzqqq' is not a command" in err and "did you mean" not in err
