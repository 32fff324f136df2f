"""`build-arms` says when an LLM arm's calls failed: chunks left with empty generated fields index their
source text only, and a run where every call failed looked like any other."""

from __future__ import annotations

from harness.cli.main import main
from harness.files import read_json

from pipeline_support import edit_config, make_llm_free_study


def test_build_arms_warns_when_llm_calls_fail_even_under_quiet(tmp_path, capsys):
    make_llm_free_study(tmp_path, freeze=False)
    edit_config(tmp_path, lambda cfg: (
        cfg.__setitem__("models", {"sim": {"backend": "simulated", "name": "x", "malformed_rate": 1.0}}),
        cfg["arms"].__setitem__("E", {"kind": "E", "model": "sim", "datasets": ["docs"]})))
    assert main(["select", "--study", str(tmp_path)]) == 0
    assert main(["freeze", "--study", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["build-arms", "--study", str(tmp_path), "--arm", "E", "--quiet"]) == 0
    cost = read_json(tmp_path / "results/chunks/docs/E.manifest.json")["llm"]["cost"]
    n = cost["failures"]
    assert n > 0 and cost["failed_calls"] == n  # every chunk's one call failed, after its retries
    assert capsys.readouterr().err.splitlines() == [
        f"warning: docs/E: {n} of {n} chunks have no generated fields: {n} LLM call(s) never gave valid JSON "
        "after "
        f"{cost['retries']} retries (llm_failed in the chunk set; see its manifest's llm.cost)"
    ]
