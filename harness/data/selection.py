"""`harness select`: seeded samples written to selection/selection.json (docs/design.md, Data model).

Per dataset, from its `selection:` config section:

    selection:
      seed: 2027
      n_clusters: 300          # qasper / jsonl: papers / clusters ("all" allowed)
      n_questions: all         # freshstack: per domain; an int, "all", or {domain: int | "all"}
      exclude: selection/pilot_qasper_paper_ids.txt   # or an inline list; file paths are relative to the
      study

Each dataset's adapter draws its entry (harness.data.sampling). Eligible ids are those that survive
conversion: Qasper papers and JSONL clusters with at least one kept question, FreshStack questions with
located Markdown gold. FreshStack also records, per domain, the gold files of the selected questions and the
distractor files drawn for them. The file holds no timestamps: the same inputs give the same bytes.
"""

from __future__ import annotations

from harness.data.adapters import ADAPTERS
from harness.data.load import fetch_hint, load_dataset
from harness.files import atomic_write_json
from harness.study import Study

FORMAT_VERSION = 1


def draw_selection(study: Study) -> dict:
    """Every dataset's sample drawn from its seed, data and exclusions, as selection.json holds it (nothing
    written: the audit compares it with the released file)."""
    datasets = {}
    for name, cfg in sorted(study.config.datasets.items()):
        with fetch_hint(study, name, cfg):
            datasets[name] = ADAPTERS[cfg.adapter].select(
                study, name, cfg, lambda name=name: load_dataset(study, name, selection=None))
    return {"format": FORMAT_VERSION, "study": study.name, "datasets": datasets}


def build_selection(study: Study) -> dict:
    """Draw every dataset's sample and write selection/selection.json; returns what was written."""
    selection = draw_selection(study)
    atomic_write_json(study.selection_path, selection)
    return selection


def summary_lines(selection: dict) -> list[str]:
    lines = []
    for name, entry in selection["datasets"].items():
        parts = [entry] if "domains" not in entry else list(entry["domains"].values())
        labels = [name] if "domains" not in entry else [f"{name}/{d}" for d in entry["domains"]]
        for label, part in zip(labels, parts):
            line = (
                f"{label}: selected {len(part['selected'])} of {part['population_count']} "
                f"({part['eligible_count']} eligible, {len(part['excluded'])} excluded, seed {entry['seed']})"
            )
            if "distractors" in part:
                line += f"; {len(part['gold_files'])} gold files + {len(part['distractors'])} distractors"
            lines.append(line)
    return lines
