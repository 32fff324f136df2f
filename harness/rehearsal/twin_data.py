"""The synthetic twin's data: simulated files in each dataset adapter's own format, written under the twin's
root, and the `datasets:` mapping that points the twin's config at them.

    write_twin_datasets(config, study_root, out, scale="small", seed=0) -> {name: datasets entry}

Every entry keeps its adapter, metric_set, retrieval_scope, selection seed and other settings; only paths
change (all relative to `out`), plus:
  - a FreshStack domain's `commit` becomes a digest of its simulated checkout (not a git repository: the
    adapter never checks the commit, and the freeze records "not a git checkout" and hashes the files used);
  - an exclusion file is copied to data/exclusions/, and its ids become clusters of the twin (Qasper papers;
    questions of the first FreshStack domain), eligible and then excluded, as the pilot's were; inline
    exclusion lists are kept as written (ids that name nothing are ignored by the draw);
  - a selection count larger than what the twin holds is lowered to what it holds.
  - `source:` sections (what `harness fetch` downloads) are left out: nothing of the twin is fetched.
What was generated and every lowered count are listed in data/twin_data.json (`notes`).

Datasets that read the same files (flagship: `qasper` and `qasper-pooled`) get one set of files. Sizes
(SIZES): `paper` is the paper's (Qasper: 300 papers, 951 questions, 2,245 evidence paragraphs; FreshStack: 235
questions over 377 pooled files, per domain 89 / 99 / 47 over 98 / 189 / 90; the lab's handbook: 25
questions), `small` a few minutes' rehearsal. A JSONL dataset is shaped by its metric set: `qasper` as the
Qasper twin (one Markdown paper per document), `freshstack` as the FreshStack twin (pooled docs per domain,
under the domain names of the study's own documents file: a plan may name them as strata).
The same (config, scale, seed) gives the same bytes.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from harness.config import to_plain
from harness.config.datasets import DatasetConfig, FreshStackDataset
from harness.config.metric_sets import EVIDENCE_STRINGS, METRIC_SETS
from harness.data.adapters import ADAPTERS
from harness.data.common import SimulatedCorpus, iter_jsonl_numbered
from harness.data.freshstack import distractor_count
from harness.data.qasper import convert_paper
from harness.data.sampling import read_exclusions
from harness.errors import HarnessError
from harness.files import (
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_jsonl,
    atomic_write_text,
    sha256_text,
)
from harness.rehearsal.twin_docs import Page, PageWriter, page_paths
from harness.rehearsal.twin_handbook import handbook, handbook_questions
from harness.rehearsal.twin_papers import PaperWriter, paper_ids, plan_papers, INELIGIBLE_PAPERS
from harness.rehearsal.twin_text import Lexicon
from harness.study import Study

SCALES = ("paper", "small")
FOLDER = "data"  # under the twin's root
MANIFEST = "twin_data.json"
SOURCE = "simulated by harness rehearse (harness.rehearsal.twin_data)"
NOT_KEPT = (
    "source",
)  # where the real files are fetched from (hub ids, URLs, commits): the twin's are simulated


@dataclass(frozen=True)
class PaperSizes:
    papers: int  # eligible papers besides the excluded ones (the selection's population)
    questions: int  # kept questions over those papers
    evidence: int  # their evidence paragraphs


@dataclass(frozen=True)
class DomainSizes:
    questions: int  # questions with located Markdown gold, besides the excluded ones
    pooled: int  # files the domain's questions search (gold files plus distractors)
    without_markdown_gold: int  # questions whose gold lies outside Markdown files (dropped by the adapter)


@dataclass(frozen=True)
class Sizes:
    papers: PaperSizes
    domains: tuple[DomainSizes, ...]  # by position of the config's domains (a longer list repeats these)
    handbook_questions: int


# paper: the published counts (paper.txt, section 3 and appendix; ../shared/data/flagship/README.md). Only
# Laravel's pooled files (98, the full docs) and the total (377) are published; Angular's and YOLO's 279 are
# split in proportion to their questions. Questions without Markdown gold: 22 / 30 / 10, as published.
SIZES = {
    "paper": Sizes(PaperSizes(300, 951, 2245),
                   (DomainSizes(89, 98, 22), DomainSizes(99, 189, 30), DomainSizes(47, 90, 10)), 25),
    "small": Sizes(PaperSizes(12, 40, 94),
                   (DomainSizes(10, 14, 3), DomainSizes(10, 14, 3), DomainSizes(6, 10, 2)), 25),
}
QUESTIONS_PER_RAISED_PAPER = 1.2  # a small twin raised to a sample's size stays near one question per paper
GOLD_FILES_PER_QUESTION = 0.75  # gold files of a `full` domain, per question (the rest of it is distractors)


@dataclass
class Twin:
    """One call's state: where to write, the sizes, the files already written and the notes."""

    study: Study
    out: Path
    scale: str
    seed: int
    written: dict[str, dict] = field(default_factory=dict)  # data key -> the group's paths and counts
    exclusion_copies: dict[str, str] = field(default_factory=dict)  # resolved source -> twin path
    manifest: dict[str, dict] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    needed: dict[str, int] = field(default_factory=dict)  # group -> clusters the plan's samples draw at least

    @property
    def sizes(self) -> Sizes:
        return SIZES[self.scale]

    def paper_sizes(self, group: str) -> PaperSizes:
        """The scale's sizes, raised to the clusters a registered sample draws (a small twin must still
        hold the 100 papers a subset test samples), questions and evidence in the scale's proportions."""
        base = self.sizes.papers
        need = self.needed.get(group, 0)
        if need <= base.papers:
            return base
        questions = max(base.questions, round(need * QUESTIONS_PER_RAISED_PAPER))
        self.notes.append(
            f"{group}: {need} papers instead of {base.papers}, for the plan's largest cluster sample"
        )
        return PaperSizes(need, questions, round(questions * base.evidence / base.questions))

    @property
    def short_papers(self) -> bool:
        return self.scale == "small"

    def rng(self, group: str) -> np.random.Generator:
        """A generator per group of files, so one dataset's files do not depend on the others'."""
        return np.random.default_rng([self.seed, int(sha256_text(group)[:12], 16)])

    def path(self, *parts: str) -> str:
        return "/".join((FOLDER,) + parts)

    def write_text(self, rel: str, text: str) -> None:
        atomic_write_text(self.out / rel, text)


def write_twin_datasets(config, study_root: Path, out: Path, *, scale: str, seed: int,
                        min_clusters: dict[str, int] | None = None) -> dict[str, dict]:
    """Write simulated data for every dataset of `config` under `out` and return the twin's `datasets:`
    mapping (plain data, paths relative to `out`). `min_clusters` (dataset -> count): the clusters the
    plan's samples and the arms' document samples draw, which a Qasper-like twin holds at least."""
    if scale not in SCALES:
        raise HarnessError(f"twin data: scale {scale!r} is not one of {', '.join(SCALES)}")
    twin = Twin(Study(Path(study_root).resolve()), Path(out), scale, seed)
    groups = _groups(config.datasets)
    mapping = {}
    for name, cfg in config.datasets.items():
        entry = to_plain(cfg)
        key = _data_key(cfg)
        excluded = sorted(
            {i for member in groups[key] for i in _excluded_ids(twin, member, config.datasets[member])}
        )
        if key not in twin.written:
            twin.needed[groups[key][0]] = max((min_clusters or {}).get(m, 0) for m in groups[key])
            writer = WRITERS.get(cfg.adapter, _write_through_adapter)
            twin.written[key] = writer(twin, groups[key][0], cfg, excluded)
        mapping[name] = _entry(twin, name, cfg, entry, twin.written[key])
    atomic_write_json(twin.out / FOLDER / MANIFEST, {"scale": scale, "seed": seed, "datasets": twin.manifest,
                                                      "notes": twin.notes})
    return mapping


# --- grouping, exclusions and the returned entries ---


def _data_key(cfg: DatasetConfig) -> str:
    """What makes two datasets read the same files."""
    plain = to_plain(cfg)
    keys = ("adapter", "metric_set", "files", "hub", "documents", "questions", "document", "domains")
    return json.dumps({k: plain.get(k) for k in keys}, sort_keys=True)


def _groups(datasets: dict[str, DatasetConfig]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for name, cfg in datasets.items():
        groups.setdefault(_data_key(cfg), []).append(name)
    return groups


def _excluded_ids(twin: Twin, name: str, cfg: DatasetConfig) -> list[str]:
    if cfg.selection is None:
        return []
    return read_exclusions(twin.study, name, cfg.selection.exclude)["ids"]


def _exclusion_entry(twin: Twin, name: str, value):
    """An exclusion file copied into the twin (same bytes, so its ids and comments stay); inline lists
    kept."""
    if not isinstance(value, str):
        return list(value)
    source = twin.study.resolve(value).resolve()
    if str(source) not in twin.exclusion_copies:
        rel = twin.path("exclusions", source.name)
        if rel in twin.exclusion_copies.values():
            rel = twin.path("exclusions", f"{name}-{source.name}")
        atomic_write_bytes(twin.out / rel, source.read_bytes())
        twin.exclusion_copies[str(source)] = rel
    return twin.exclusion_copies[str(source)]


def _entry(twin: Twin, name: str, cfg: DatasetConfig, entry: dict, written: dict) -> dict:
    written = copy.deepcopy(written)  # each entry its own lists and maps (YAML would write anchors otherwise)
    paths = written["paths"]
    entry = {
        ("files" if k == "hub" else k): paths.get("files" if k == "hub" else k, v)
        for k, v in entry.items()
        if k not in NOT_KEPT
    }
    if "domains" in written:  # per-domain files (FreshStack)
        entry["domains"] = {d: {k: v for k, v in {**entry["domains"][d], **written["domains"][d]}.items()
                                if k not in NOT_KEPT} for d in entry["domains"]}
    selection = entry.get("selection")
    if selection is not None:
        selection["exclude"] = _exclusion_entry(twin, name, cfg.selection.exclude)
        if "n_clusters" in selection:
            selection["n_clusters"] = _lowered(twin, f"{name}: selection.n_clusters", selection["n_clusters"],
                                               written["clusters"])
        if "n_questions" in selection:
            n = selection["n_questions"]
            held = written["questions"]
            selection["n_questions"] = (
                {d: _lowered(twin, f"{name}/{d}: selection.n_questions", v, held[d]) for d, v in n.items()}
                if isinstance(n, dict)
                else _lowered(twin, f"{name}: selection.n_questions", n, min(held.values()))
            )
    return entry


def _lowered(twin: Twin, what: str, n, available: int):
    if n == "all" or n <= available:
        return n
    twin.notes.append(f"{what} lowered from {n} to {available}: the {twin.scale} twin holds {available}")
    return available


# --- Qasper (original schema) ---


def _paper_records(twin: Twin, group: str, excluded: list[str]) -> tuple[dict[str, dict], list[str]]:
    """paper id -> record: the sized papers, the excluded ids as eligible papers of their own, and a few
    papers
    with no usable question; and the ids of the excluded ones."""
    sizes = twin.paper_sizes(group)
    rng = twin.rng(group)
    writer = PaperWriter(Lexicon(rng), short=twin.short_papers)
    n_ineligible = round(INELIGIBLE_PAPERS * sizes.papers)
    fresh = paper_ids(rng, sizes.papers + n_ineligible, set(excluded))
    records = {plan.paper_id: writer.record(plan)
               for plan in plan_papers(rng, fresh[:sizes.papers], sizes.questions, sizes.evidence)}
    if excluded:
        per_paper = sizes.questions / sizes.papers
        n_questions = max(len(excluded), round(per_paper * len(excluded)))
        n_evidence = max(n_questions, round(sizes.evidence / sizes.questions * n_questions))
        for plan in plan_papers(rng, excluded, n_questions, n_evidence):
            records[plan.paper_id] = writer.record(plan)
    for pid in fresh[sizes.papers:]:
        records[pid] = writer.ineligible(pid)
    return records, excluded


def _write_qasper(twin: Twin, group: str, cfg, excluded: list[str]) -> dict:
    records, excluded = _paper_records(twin, group, excluded)
    names = [
        Path(f).name
        for f in (cfg.files if isinstance(cfg.files, tuple) else (cfg.files,) if cfg.files else ())
    ]
    names = names or ["qasper-twin.json"]
    names = [n if names.count(n) == 1 else f"{k}-{n}" for k, n in enumerate(names)]
    # the excluded papers in the first file (the pilot's came from dev), the rest spread evenly
    others = [pid for pid in records if pid not in set(excluded)]  # in generation order: not sorted by id
    step = math.ceil(len(others) / len(names))
    shares = [(excluded if k == 0 else []) + others[k * step:(k + 1) * step] for k in range(len(names))]
    files = []
    for name, ids in zip(names, shares):
        rel = twin.path(group, name)
        twin.write_text(
            rel, json.dumps({pid: records[pid] for pid in sorted(ids)}, ensure_ascii=False) + "\n"
        )
        files.append(rel)
    twin.manifest[group] = _paper_counts(records, excluded) | {"files": files}
    return {"paths": {"files": files}, "clusters": twin.paper_sizes(group).papers}


def _paper_counts(records: dict[str, dict], excluded: list[str]) -> dict:
    kept = [q for pid, r in sorted(records.items()) if pid not in set(excluded)
            for q in convert_paper(pid, r).questions]
    return {"papers": len(records), "excluded_papers": len(excluded), "questions": len(kept),
            "evidence": sum(len(q.evidence) for q in kept)}


# --- FreshStack (queries, corpus, checkout per domain) ---


def _gold_count(pooled: int, ratio) -> int:
    """Gold files whose distractors (ratio x gold, rounded as the adapter rounds) bring the pool to
    `pooled`."""
    if ratio == "full":
        return pooled
    return next(g for g in range(1, pooled + 1) if g + distractor_count(ratio, g, pooled) >= pooled)


def _write_freshstack(twin: Twin, group: str, cfg: FreshStackDataset, excluded: list[str]) -> dict:
    rng = twin.rng(group)
    lex = Lexicon(rng)
    writer = PageWriter(lex)
    taken = set(excluded)
    domains, questions, manifest = {}, {}, {}
    for position, (domain, options) in enumerate(cfg.domains.items()):
        sizes = twin.sizes.domains[position % len(twin.sizes.domains)]
        ratio = options.distractor_ratio
        if ratio == "full":
            n_gold = min(sizes.pooled, max(1, round(GOLD_FILES_PER_QUESTION * sizes.questions)))
            n_files = sizes.pooled
        else:
            n_gold = _gold_count(sizes.pooled, ratio)
            needed = distractor_count(ratio, n_gold, sizes.pooled)
            n_files = n_gold + needed + max(2, needed // 2)  # more candidates than drawn: the draw chooses
        topic = lex.topic(40)
        pages = [writer.page(p, topic) for p in page_paths(lex, n_files, nested=0.3)]
        gold_pages = pages[:n_gold]
        folder = twin.path(group, domain)
        prefix = options.corpus_path_prefix
        for page in pages:
            twin.write_text(f"{folder}/checkout/{page.path}", page.text)
        code_files = [
            f"src/{lex.words[int(i)]}.php" for i in rng.choice(np.arange(300, 3000), 8, replace=False)
        ]
        ids = _question_ids(rng, sizes.questions + sizes.without_markdown_gold, taken)
        taken.update(ids)
        domain_excluded = excluded if position == 0 else []
        rows = _domain_queries(lex, writer, topic, prefix, gold_pages, code_files, ids[:sizes.questions],
                               domain_excluded, ids[sizes.questions:])
        corpus = [{"_id": f"{prefix}{p.path}_{a}_{b}", "title": "", "text": p.text[a:b]}
                  for p in sorted(pages, key=lambda p: p.path) for a, b in p.sections]
        corpus += [{"_id": f"{prefix}{path}_0_{len(text)}", "title": "", "text": text}
                   for path, text in _code_file_texts(lex, code_files)]
        atomic_write_jsonl(twin.out / folder / "queries.jsonl", sorted(rows, key=lambda r: r["query_id"]))
        atomic_write_jsonl(twin.out / folder / "corpus.jsonl", corpus)
        entry = {"queries": f"{folder}/queries.jsonl", "corpus": f"{folder}/corpus.jsonl",
                 "checkout": f"{folder}/checkout",
                 "commit": _checkout_digest(pages)}
        if options.qrels is not None:
            entry["qrels"] = f"{folder}/qrels.tsv"
            lines = ["query-id\tcorpus-id\tscore"] + [
                f"{r['query_id']}\t{cid}\t1"
                for r in rows
                for n in r["nuggets"]
                for cid in n["relevant_corpus_ids"]
            ]
            twin.write_text(entry["qrels"], "\n".join(lines) + "\n")
        domains[domain] = entry
        questions[domain] = sizes.questions
        manifest[domain] = {"checkout_files": len(pages), "gold_files": n_gold, "questions": sizes.questions,
                            "excluded_questions": len(domain_excluded),
                            "questions_without_markdown_gold": sizes.without_markdown_gold}
    twin.manifest[group] = {"domains": manifest}
    return {"paths": {}, "domains": domains, "questions": questions, "clusters": sum(questions.values())}


def _checkout_digest(pages: list[Page]) -> str:
    """The twin's stand-in for a docs commit: 40 hex digits fixed by the checkout's paths and texts."""
    return sha256_text("".join(f"{p.path}\n{p.text}" for p in sorted(pages, key=lambda p: p.path)))[:40]


def _question_ids(rng: np.random.Generator, n: int, taken: set[str]) -> list[str]:
    """n new Stack Overflow-style question ids (8 digits)."""
    out: list[str] = []
    seen = set(taken)
    while len(out) < n:
        qid = str(int(rng.integers(70_000_000, 80_000_000)))
        if qid not in seen:
            seen.add(qid)
            out.append(qid)
    return out


def _gold_assignment(rng: np.random.Generator, n_questions: int, n_gold: int) -> list[list[int]]:
    """Gold files per question: every gold file named by some question, each question 1-3 files (more when
    there are more files than questions can share)."""
    per_question: list[list[int]] = [[] for _ in range(n_questions)]
    for j, f in enumerate(rng.permutation(n_gold)):
        per_question[j % n_questions].append(int(f))
    for files in per_question:
        want = min(n_gold, max(len(files), 1 + int(rng.binomial(2, 0.3))))
        while len(files) < want:
            f = int(rng.integers(0, n_gold))
            if f not in files:
                files.append(f)
    return per_question


def _domain_queries(
    lex: Lexicon,
    writer: PageWriter,
    topic,
    prefix: str,
    gold_pages: list[Page],
    code_files: list[str],
    kept: list[str],
    excluded: list[str],
    no_markdown: list[str],
) -> list[dict]:
    rng = lex.rng
    rows = []
    assignment = _gold_assignment(rng, len(kept), len(gold_pages))
    assignment += [[int(rng.integers(0, len(gold_pages)))] for _ in excluded]
    for qid, files in zip(kept + excluded, assignment):
        spans = []
        for f in files:
            page = gold_pages[f]
            n = min(len(page.sections), 1 + int(rng.integers(0, 2)))  # one or two sections of each gold file
            for s in sorted(int(i) for i in rng.choice(len(page.sections), n, replace=False)):
                spans.append((page, page.sections[s]))
        ids = [f"{prefix}{p.path}_{a}_{b}" for p, (a, b) in spans]
        rows.append(_query_row(writer, topic, qid, [p.text[a:b] for p, (a, b) in spans], ids))
    code = dict(_code_file_texts(lex, code_files))
    for qid in no_markdown:
        path = code_files[int(rng.integers(0, len(code_files)))]
        rows.append(_query_row(writer, topic, qid, [code[path]], [f"{prefix}{path}_0_{len(code[path])}"]))
    return rows


def _code_file_texts(lex: Lexicon, code_files: list[str]) -> list[tuple[str, str]]:
    """Source files some gold points at (outside Markdown: the adapter drops that gold); fixed by the path."""
    return [(path, f"<?php\n// {path}\nclass {Path(path).stem.capitalize()} {{}}\n") for path in code_files]


def _query_row(writer: PageWriter, topic, qid: str, gold: list[str], ids: list[str]) -> dict:
    q = writer.question(gold, topic)
    return {
        "query_id": qid,
        "query_title": q.title,
        "query_text": q.body,
        "answer_id": f"{qid}1",
        "answer_text": q.answer,
        "metadata": {"date": "2024-06-01", "tags": [writer.lex.word(topic)]},
        "nuggets": [
            {
                "_id": f"{qid}_{n + 1}",
                "text": text,
                "relevant_corpus_ids": [cid],
                "non_relevant_corpus_ids": [],
            }
            for n, (text, cid) in enumerate(zip(q.nuggets, ids))
        ],
    }


# --- JSONL corpus (docs/jsonl-format.md) ---


def _write_through_adapter(twin: Twin, group: str, cfg, excluded: list[str]) -> dict:
    """A format without a writer here (JSONL, or a new adapter's): the JSONL twin's documents and questions,
    shaped by the metric set's gold, written by the adapter's own `write_simulated`."""
    write = ADAPTERS[cfg.adapter].write_simulated
    if write is None:
        raise HarnessError(f"dataset adapter {cfg.adapter!r} has no writer of simulated files: give its "
                           "ADAPTER a `write_simulated` (docs/extending.md, A dataset adapter)")
    if METRIC_SETS[cfg.metric_set].gold == EVIDENCE_STRINGS:
        documents, questions, clusters = _jsonl_papers(twin, group)
    else:
        documents, questions, clusters = _jsonl_docs(twin, group, _study_domains(twin, cfg))
    corpus = SimulatedCorpus([{k: v for k, v in d.items() if not k.startswith("_")} for d in documents],
                             {d["_path"]: d["_text"] for d in documents}, questions)
    paths = write(twin.out, twin.path(group), corpus)
    twin.manifest[group] = {"documents": len(documents), "questions": len(questions)}
    return {"paths": paths, "clusters": clusters}


def _jsonl_papers(twin: Twin, group: str) -> tuple[list[dict], list[dict], int]:
    """The Qasper twin's papers as Markdown documents; each question's evidence the located paragraphs."""
    records, _ = _paper_records(twin, group, [])
    documents, questions = [], []
    for pid in sorted(records):
        conversion = convert_paper(pid, records[pid], dataset=group)
        doc_id = f"{group}/{pid}"
        documents.append(
            {
                "doc_id": doc_id,
                "domain": group,
                "path": f"docs/{pid}.md",
                "provenance": {"source": SOURCE},
                "_path": f"docs/{pid}.md",
                "_text": conversion.document.text,
            }
        )
        for q in conversion.questions:
            questions.append(
                {
                    "qid": q.qid,
                    "query": q.query,
                    "scope": {"doc": doc_id},
                    "cluster": "doc",
                    "stratum": "",
                    "evidence": [{"doc_id": doc_id, "start": e.start, "end": e.end} for e in q.evidence],
                    "answers": list(q.answers),
                    "answer_type": q.answer_type,
                }
            )
    clusters = len({q["scope"]["doc"] for q in questions})
    return documents, questions, clusters


def _study_domains(twin: Twin, cfg) -> list[str]:
    """The domains of the study's own documents file, in order of first appearance: a plan may name them as
    strata. Empty when the file is absent (the data not fetched yet)."""
    documents = getattr(cfg, "documents", None)  # another adapter's entry may name no documents file
    path = twin.study.resolve(documents) if isinstance(documents, str) else None
    if path is None or not path.is_file():
        return []
    return list(dict.fromkeys(str(row.get("domain")) for _, row in iter_jsonl_numbered(path)))


def _jsonl_docs(twin: Twin, group: str, names: list[str]) -> tuple[list[dict], list[dict], int]:
    """The FreshStack twin's shape: pooled docs per domain, gold spans of sections, one cluster per question.
    The domains keep the study's names (else three invented ones); sizes go by position."""
    rng = twin.rng(group)
    lex = Lexicon(rng)
    writer = PageWriter(lex)
    documents, questions = [], []
    table = twin.sizes.domains
    names = names or [lex.words[int(i)] for i in rng.choice(np.arange(300, 3000), len(table), replace=False)]
    for position, domain in enumerate(names):
        sizes = table[position % len(table)]
        topic = lex.topic(40)
        pages = [writer.page(p, topic) for p in page_paths(lex, sizes.pooled, nested=0.0)]
        for page in pages:
            path = f"docs/{domain}/{page.path}"
            documents.append({"doc_id": f"{domain}/{page.path}", "domain": domain, "path": path,
                              "provenance": {"source": SOURCE}, "_path": path, "_text": page.text})
        n_gold = min(len(pages), max(1, round(GOLD_FILES_PER_QUESTION * sizes.questions)))
        for k, files in enumerate(_gold_assignment(rng, sizes.questions, n_gold)):
            spans = [
                (pages[f], pages[f].sections[int(rng.integers(0, len(pages[f].sections)))]) for f in files
            ]
            q = writer.question([p.text[a:b] for p, (a, b) in spans], topic)
            questions.append({
                "qid": f"{domain}-q{k + 1:03d}", "query": f"{q.title} {q.body}", "scope": {"domain": domain},
                "cluster": "question", "stratum": "domain",
                "evidence": [{"doc_id": f"{domain}/{p.path}", "start": a, "end": b, "text": p.text[a:b]}
                             for p, (a, b) in spans],
                "answers": [q.answer], "nuggets": list(q.nuggets), "reference_answer": q.answer})
    return documents, questions, len(questions)


# --- question_evidence (the lab's format) ---


def _write_question_evidence(twin: Twin, group: str, cfg, excluded: list[str]) -> dict:
    lex = Lexicon(twin.rng(group))
    text, provisions = handbook(lex)
    records = handbook_questions(lex, provisions, twin.sizes.handbook_questions)
    document, qe = twin.path(group, Path(cfg.document).name), twin.path(group, Path(cfg.questions).name)
    twin.write_text(document, text)
    twin.write_text(qe, json.dumps(records, indent=1, ensure_ascii=False) + "\n")
    twin.manifest[group] = {
        "characters": len(text),
        "provision_count": len(provisions),
        "questions": len(records),
    }
    return {"paths": {"document": document, "questions": qe}, "clusters": len(records)}


# adapters whose raw files the twin simulates in full (their quirks: ineligible papers, checkouts, gold
# outside Markdown); any other adapter writes the JSONL twin's corpus in its own format
# (Adapter.write_simulated)
WRITERS: dict[str, Callable[[Twin, str, Any, list[str]], dict]] = {
    "qasper": _write_qasper,
    "freshstack": _write_freshstack,
    "question_evidence": _write_question_evidence,
}
