"""One CLI convention: every command that works for more than a second takes --no-progress
and --quiet, and `harness` with no command lists the stages in pipeline order."""

from __future__ import annotations

import pytest

from harness.cli.main import COMMANDS, build_parser, main
from harness.cli.output import progress
from harness.pipeline.stages import PIPELINE, STAGES
from harness.rehearsal import stages as rehearsal_stages

from data_support import CHECKOUT, freshstack_study

# the stages plus the other commands that fetch, simulate or build for more than a second
LONG_RUNNING = (*STAGES, "fetch", "rehearse", "init", "compare", "power")
REQUIRED = {
    "rehearse": ["--out", "twin"],
    "init": ["d", "--documents", "f", "--questions", "q"],
    "compare": ["--dataset", "d", "--a", "A", "--b", "B", "--retriever", "r", "--metric", "m"],
    "power": ["--dataset", "d", "--a", "A", "--b", "B", "--retriever", "r", "--metric", "m", "--margin", "1"],
}


@pytest.mark.parametrize("command", LONG_RUNNING)
def test_every_long_running_command_takes_both_flags(command):
    assert command in COMMANDS
    study = [] if command == "init" else ["--study", "s"]  # init makes the study it is given
    args = build_parser(command).parse_args([command, *study, *REQUIRED.get(command, []),
                                             "--no-progress", "--quiet"])
    assert args.no_progress and args.quiet


def test_no_command_prints_the_stages_in_pipeline_order(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    lines = [line.split() for line in out.splitlines() if line.startswith("  ")]
    assert [words[0] for words in lines] == list(STAGES)
    assert [name for name, _ in PIPELINE] == list(STAGES)
    assert "select      draw the seeded selection" in out
    assert rehearsal_stages.STAGES == STAGES  # the rehearsal runs the same list


def test_quiet_keeps_the_losses_and_drops_the_rest(tmp_path, capsys):
    if not CHECKOUT.is_dir():
        pytest.skip(f"{CHECKOUT} is absent (the shared data folder)")
    study = freshstack_study(tmp_path)  # q2's gold is outside Markdown and mismatched: a loss on loading
    assert main(["select", "--study", str(study.root)]) == 0
    loud = capsys.readouterr()
    assert "wrote" in loud.out and "dropped or changed on loading" in loud.out
    assert main(["select", "--study", str(study.root), "--quiet"]) == 0
    quiet = capsys.readouterr()
    assert quiet.out == ""
    assert "dropped or changed on loading" in quiet.err and "wrote" not in quiet.err


def test_progress_follows_both_flags():
    parse = build_parser("score").parse_args
    assert progress(parse(["score"]))
    assert not progress(parse(["score", "--no-progress"]))
    assert not progress(parse(["score", "--quiet"]))
