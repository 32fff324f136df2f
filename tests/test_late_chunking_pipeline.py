"""Late chunking through `score`: the scoring loop gives the dataset's documents to the retriever context,
so a late retriever restricted to S scores its cells (the refusal of S+T is tested in test_late_chunking)."""

from __future__ import annotations

from harness.cli.main import main
from pipeline_support import edit_config, make_llm_free_study
from tiny_models import tiny_bert_sentence_transformer


def test_score_runs_a_late_retriever_on_S(tmp_path):
    model = tiny_bert_sentence_transformer(tmp_path / "bert", max_seq_length=32)
    root = tmp_path / "study"
    make_llm_free_study(root, freeze=False)
    late = {"type": "dense", "model": str(model), "pooling": "late", "late_overlap": 8}
    edit_config(root, lambda cfg: cfg["retrievers"].__setitem__("late", late | {"arms": ["S"]}))
    for step in ("select", "freeze", "build-arms", "score"):
        assert main([step, "--study", str(root)]) == 0, step
    runs = sorted((root / "results" / "runs").rglob("*__late*"))
    assert runs and {p.name.split("__")[0] for p in runs} == {"S"}  # the late retriever ranks S only
    assert all(p.read_text().count(" Q0 ") > 0 for p in runs)

