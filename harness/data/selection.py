"""`harness select`: seeded samples written to selection/selection.json (DESIGN section 3).

Per dataset, from its `selection:` config section:

    selection:
      seed: 2027
      n_clusters: 300          # qasper / jsonl: papers / clusters ("all" allowed)
      n_questions: all         # freshstack: per domain; an int, "all", or {domain: int | "all"}
      exclude: selection/pilot_qasper_paper_ids.txt   # or an inline list; file paths are relative to the study

The draw is random.Random(seed).sample(sorted(eligible - excluded), n), recorded in draw order ("all" records
the sorted population). Eligible ids are those that survive conversion: Qasper papers and JSONL clusters with at
least one kept question, FreshStack questions with located Markdown gold. FreshStack also records, per domain,
the gold files of the selected questions and the distractor files drawn for them. The file holds no timestamps:
the same inputs give the same bytes.
"""

from __future__ import annotations

import random

from harness.data import freshstack
from harness.data.common import InputReader
from harness.data.load import dataset_options, load_dataset
from harness.errors import HarnessError
from harness.files import atomic_write_json, sha256_file

FORMAT_VERSION = 1


def read_exclusions(study, name: str, value) -> dict:
    """{source, sha256 (files only), ids (sorted)} from an inline list or a file of one id per line."""
    if value is None:
        value = []
    if isinstance(value, list):
        if not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
            raise HarnessError(f"dataset `{name}`: selection.exclude must list ids (strings)")
        return {"source": "inline", "ids": sorted({str(v) for v in value})}
    if not isinstance(value, str):
        raise HarnessError(f"dataset `{name}`: selection.exclude must be a list of ids or a file path, got {value!r}")
    path = study.resolve(value)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise HarnessError(f"dataset `{name}`: exclusion file {path} not found (selection.exclude)") from None
    ids = {line.split("#", 1)[0].strip() for line in lines}
    return {"source": value, "sha256": sha256_file(path), "ids": sorted(i for i in ids if i)}


def _n(name: str, key: str, value):
    if value == "all" or (isinstance(value, int) and not isinstance(value, bool) and value > 0):
        return value
    raise HarnessError(f"dataset `{name}`: selection.{key} must be a positive integer or \"all\", got {value!r}")


def draw(name: str, eligible: list[str], excluded_ids: list[str], n, seed: int) -> dict:
    """The sample and everything needed to audit it."""
    eligible = sorted(set(eligible))
    excluded = sorted(set(eligible) & set(excluded_ids))
    excluded_set = set(excluded)
    population = [e for e in eligible if e not in excluded_set]
    if n == "all":
        selected = population
    else:
        if n > len(population):
            raise HarnessError(f"dataset `{name}`: asked for {n} but only {len(population)} eligible ids remain "
                               f"after {len(excluded)} exclusions")
        selected = random.Random(seed).sample(population, n)
    return {
        "n_requested": n,
        "eligible_count": len(eligible),
        "eligible": eligible,
        "excluded": excluded,
        "population_count": len(population),
        "selected": selected,
    }


def _settings(study, name: str, options: dict) -> tuple[int, dict]:
    settings = options.get("selection")
    if not isinstance(settings, dict):
        raise HarnessError(f"dataset `{name}`: a `selection:` section with `seed` is required")
    seed = settings.get("seed")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise HarnessError(f"dataset `{name}`: selection.seed must be an integer, got {seed!r}")
    return seed, read_exclusions(study, name, settings.get("exclude"))


def select_clusters(study, name: str, options: dict) -> dict:
    seed, exclude = _settings(study, name, options)
    n = _n(name, "n_clusters", options["selection"].get("n_clusters", "all"))
    loaded = load_dataset(study, name, selection=None)
    clusters = [q.cluster for q in loaded.questions]
    unit = "cluster"
    if options["adapter"] == "qasper":  # sample paper ids, as the published procedure does
        clusters = [c.removeprefix("qasper/") for c in clusters]
        unit = "paper"
    return {"adapter": options["adapter"], "unit": unit, "seed": seed, "exclude": exclude} | draw(
        name, clusters, exclude["ids"], n, seed)


def select_freshstack(study, name: str, options: dict) -> dict:
    seed, exclude = _settings(study, name, options)
    n_setting = options["selection"].get("n_questions", "all")
    domains = {}
    for domain, domain_options in sorted(freshstack.domains_of(name, options).items()):
        n = n_setting.get(domain, "all") if isinstance(n_setting, dict) else n_setting
        data = freshstack.convert_domain(study, name, domain, domain_options, InputReader(study.root))
        entry = draw(f"{name}/{domain}", [q.qid for q in data.questions], exclude["ids"], _n(name, "n_questions", n),
                     seed)
        chosen = set(entry["selected"])
        gold = freshstack.gold_files([q for q in data.questions if q.qid in chosen])
        ratio = freshstack.distractor_ratio(name, domain, domain_options)
        gold_set = set(gold)
        candidates = [c for c in data.candidates if c not in gold_set]
        entry |= {
            "commit": str(domain_options.get("commit", "")),
            "gold_files": gold,
            "distractor_ratio": ratio,
            "distractor_candidates_count": len(candidates),
            "distractors": freshstack.draw_distractors(candidates, len(gold), ratio, seed),
        }
        domains[domain] = entry
    return {"adapter": "freshstack", "unit": "question", "seed": seed, "exclude": exclude, "domains": domains}


def build_selection(study) -> dict:
    """Draw every dataset's sample and write selection/selection.json; returns what was written."""
    datasets = {}
    for name in sorted(study.datasets):
        options = dataset_options(study, name)
        if options["adapter"] == "freshstack":
            datasets[name] = select_freshstack(study, name, options)
        else:
            datasets[name] = select_clusters(study, name, options)
    selection = {"format": FORMAT_VERSION, "study": study.name, "datasets": datasets}
    atomic_write_json(study.selection_path, selection)
    return selection


def summary_lines(selection: dict) -> list[str]:
    lines = []
    for name, entry in selection["datasets"].items():
        parts = [entry] if "domains" not in entry else list(entry["domains"].values())
        labels = [name] if "domains" not in entry else [f"{name}/{d}" for d in entry["domains"]]
        for label, part in zip(labels, parts):
            line = (f"{label}: selected {len(part['selected'])} of {part['population_count']} "
                    f"({part['eligible_count']} eligible, {len(part['excluded'])} excluded, seed {entry['seed']})")
            if "distractors" in part:
                line += f"; {len(part['gold_files'])} gold files + {len(part['distractors'])} distractors"
            lines.append(line)
    return lines
