"""FreshStack adapter: local queries / corpus / qrels files plus a docs checkout at a pinned commit.

What the FreshStack release looks like (freshstack/queries-oct-2024 and freshstack/corpus-oct-2024 on the
Hugging Face hub, one config per topic: angular, godot, langchain, laravel, yolo; and the
fresh-stack/freshstack
code that built them):
  - queries, split "test": query_id, query_title, query_text, answer_id, answer_text, metadata {date, tags},
    nuggets: [{_id, text, relevant_corpus_ids, non_relevant_corpus_ids}]. Nugget ids are "<query_id>_<n>";
    the question-level qrels are the union of the nuggets' relevant_corpus_ids.
  - corpus, split "train": _id, title (empty), text. An id is "<file path>_<start>_<end>": the file's path
    in the checkout (the repository name may lead it, e.g. "docs/"; see `corpus_path_prefix`) and the chunk's
    offsets. The chunk text was taken as `file_content[start:end]` from the file read in Python text mode, so
    the offsets index CHARACTERS of the LF-normalised text, not bytes, even where the builder calls them
    bytes.
    The path may itself contain "_", so the two offsets are split off from the right.

Local files this adapter reads (export the hub splits with `Dataset.to_json(path)`, which writes JSON lines):
  - queries: JSON lines in the queries layout above (query_title, answer_text, nuggets optional);
  - corpus: JSON lines {_id, text, ...};
  - qrels (optional): "query_id 0 corpus_id relevance" (TREC) or a header "query-id corpus-id score" then
    tab/space separated rows (BEIR); relevance > 0 is gold. Without qrels, nuggets' relevant_corpus_ids are
    used.

Dataset options (configs/study.yaml):

    freshstack:
      adapter: freshstack
      metric_set: freshstack
      domains:
        laravel:
          queries: data/freshstack/laravel/queries.jsonl
          corpus: data/freshstack/laravel/corpus.jsonl
          qrels: data/freshstack/laravel/qrels.tsv       # optional
          checkout: ../shared/data/laravel-docs-724c31cc
          commit: 724c31ccd3edce6b6dfe5e0dd2a594a47217f078
          corpus_path_prefix: ""                           # stripped from corpus-id paths
          distractor_ratio: full                           # or a number: ratio x gold files
          licence: MIT
      selection: {seed: 2027, n_questions: all, exclude: selection/pilot_freshstack_question_ids.txt}

Gold: each gold corpus id becomes one Evidence sliced from the checkout file by character offsets and checked
against the corpus text; a mismatch (or an id missing from the corpus, a file missing from the checkout,
offsets
out of range) is counted and the evidence kept unlocated. Gold outside Markdown files is dropped and counted.
A
question left with no located gold is dropped and counted. Documents are "<domain>/<path>"; a question's scope
is its domain's pooled corpus: every gold file of the domain's questions plus distractors, non-gold Markdown
files drawn with random.Random(seed).sample over the sorted candidates (count = ratio x gold files, rounded
half up; "full" = every candidate).

Counts start from the queries files: `questions_in_input` = kept + `questions_dropped_no_located_gold` +
`questions_dropped_not_selected`. A query whose title and text are both empty is refused (file and line).
Every file read (queries, corpus, qrels, each checkout file sliced or drawn) is recorded by the InputReader.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from harness.config.datasets import FreshStackDataset, FreshStackDomain
from harness.data.common import Adapter, InputReader, LoadedDataset, check_id, exclusion_paths, id_problem
from harness.data.model import Document, Evidence, Question
from harness.data.sampling import draw, seed_and_exclusions
from harness.errors import HarnessError, InputError
from harness.seeded_draw import seeded_sample
from harness.study import Study

MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")
COUNT_KEYS = ("gold_non_markdown", "gold_text_mismatch", "gold_not_in_corpus", "gold_file_missing",
              "gold_out_of_range", "gold_id_malformed", "questions_dropped_no_located_gold",
              "questions_dropped_not_selected", "documents_crlf_normalised")


@dataclass(frozen=True)
class CorpusId:
    path: str
    start: int
    end: int


def parse_corpus_id(corpus_id: str) -> CorpusId | None:
    """"<path>_<start>_<end>" -> CorpusId, or None when the id does not have that shape."""
    parts = corpus_id.rsplit("_", 2)
    if len(parts) != 3 or not parts[0] or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    return CorpusId(parts[0], int(parts[1]), int(parts[2]))


def is_markdown(path: str) -> bool:
    return path.lower().endswith(MARKDOWN_SUFFIXES)


def markdown_files(checkout: Path) -> list[str]:
    """Sorted checkout-relative POSIX paths of every Markdown file (hidden directories skipped, and a path
    that
    could not be a doc_id, with white space or a control character: it could never be retrieved)."""
    found = []
    for p in checkout.rglob("*"):
        rel = p.relative_to(checkout)
        if (p.is_file() and is_markdown(p.name) and not any(part.startswith(".") for part in rel.parts)
                and id_problem(rel.as_posix()) is None):
            found.append(rel.as_posix())
    return sorted(found)


def distractor_count(ratio, n_gold: int, n_candidates: int) -> int:
    if ratio == "full":
        return n_candidates
    return min(n_candidates, math.floor(float(ratio) * n_gold + 0.5))


def draw_distractors(candidates: list[str], n_gold: int, ratio, seed: int) -> list[str]:
    """random.Random(seed).sample over the sorted candidates; the draw order is kept (it is the record)."""
    return seeded_sample(candidates, distractor_count(ratio, n_gold, len(candidates)), seed)


# --- reading the release files ----------------------------------------------------------------------


def _string(obj: dict, key: str, path, record, *, required: bool = True) -> str:
    value = obj.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise InputError(
            f"field `{key}` must be a string, got {type(value).__name__}", path=path, record=record
        )
    return value


def read_queries(path: Path, reader: InputReader | None = None) -> list[dict]:
    """Validated query rows: qid, query, nuggets [(text, relevant ids)], answer."""
    reader = reader or InputReader(path.parent)  # without one the read is not recorded (tools, tests)
    rows, seen = [], set()
    for line, row in reader.iter_jsonl(path):
        where = f"line {line}"
        qid = row.get("query_id")
        if isinstance(qid, int) and not isinstance(qid, bool):
            qid = str(qid)
        if not isinstance(qid, str) or not qid:
            raise InputError("field `query_id` must be a non-empty string", path=path, record=where)
        check_id(qid, "query_id", path=path, record=where)
        if qid in seen:
            raise InputError(f"query_id {qid} appears twice", path=path, record=where)
        seen.add(qid)
        title = _string(row, "query_title", path, where, required=False)
        text = _string(row, "query_text", path, where)
        if not (title.strip() or text.strip()):
            raise InputError("the query is empty (`query_title` and `query_text`)", path=path, record=where)
        nuggets = row.get("nuggets") or []
        if not isinstance(nuggets, list):
            raise InputError("field `nuggets` must be a list", path=path, record=where)
        parsed = []
        for n in nuggets:
            if not isinstance(n, dict):
                raise InputError("each nugget must be an object", path=path, record=where)
            ids = n.get("relevant_corpus_ids") or []
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise InputError(
                    "nugget `relevant_corpus_ids` must be a list of strings", path=path, record=where
                )
            parsed.append((_string(n, "text", path, where), ids))
        rows.append({
            "qid": qid,
            "query": " ".join(s for s in (title.strip(), text.strip()) if s),
            "nuggets": parsed,
            "answer": _string(row, "answer_text", path, where, required=False),
        })
    return rows


def read_corpus(path: Path, reader: InputReader) -> dict[str, str]:
    corpus: dict[str, str] = {}
    for line, row in reader.iter_jsonl(path):
        where = f"line {line}"
        cid = check_id(_string(row, "_id", path, where), "corpus id", path=path, record=where)
        if cid in corpus:
            raise InputError(f"corpus id {cid} appears twice", path=path, record=where)
        corpus[cid] = _string(row, "text", path, where)
    return corpus


def read_qrels(path: Path, reader: InputReader) -> dict[str, list[str]]:
    """qid -> gold corpus ids (relevance > 0), in file order."""
    lines = reader.read_text(path, what="qrels file").splitlines()
    gold: dict[str, list[str]] = {}
    for number, line in enumerate(lines, start=1):
        fields = line.split()
        if not fields or (number == 1 and fields[0] in ("query-id", "query_id", "qid")):
            continue
        if len(fields) == 4:
            qid, _, cid, rel = fields
        elif len(fields) == 3:
            qid, cid, rel = fields
        else:
            raise InputError(
                f"expected 3 (BEIR) or 4 (TREC) fields, got {len(fields)}", path=path, record=number
            )
        try:
            relevance = float(rel)
        except ValueError:
            raise InputError(f"relevance {rel!r} is not a number", path=path, record=number) from None
        check_id(qid, "query id", path=path, record=number)
        check_id(cid, "corpus id", path=path, record=number)
        if relevance > 0 and cid not in gold.setdefault(qid, []):
            gold[qid].append(cid)
    return gold


# --- conversion ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DomainData:
    domain: str
    questions: tuple[Question, ...]  # scope left empty: it depends on the pooled corpus
    texts: dict[str, str]  # checkout-relative path -> text, for every file read
    candidates: tuple[str, ...]  # every Markdown file in the checkout, sorted
    counts: Counter
    provenance: dict


def _required(value: str | None, key: str, name: str, domain: str) -> str:
    if value is None:
        raise HarnessError(f"dataset `{name}`, domain `{domain}`: option `{key}` is missing")
    return value


def convert_domain(study: Study, name: str, domain: str, options: FreshStackDomain,
                   reader: InputReader) -> DomainData:
    resolve = study.resolve
    queries = read_queries(resolve(_required(options.queries, "queries", name, domain)), reader)
    corpus = read_corpus(resolve(_required(options.corpus, "corpus", name, domain)), reader)
    qrels = read_qrels(resolve(options.qrels), reader) if options.qrels else None
    checkout = resolve(_required(options.checkout, "checkout", name, domain))
    if not checkout.is_dir():
        raise HarnessError(f"dataset `{name}`, domain `{domain}`: checkout {checkout} is not a directory")
    prefix = options.corpus_path_prefix
    counts: Counter = Counter()
    texts: dict[str, str] = {}

    def file_text(rel: str) -> str | None:
        if rel not in texts:
            p = checkout / rel
            if not p.is_file():
                return None
            texts[rel], changed = reader.read_markdown(p)
            counts["documents_crlf_normalised"] += changed
        return texts[rel]

    questions = []
    for q in queries:
        counts["questions_in_input"] += 1
        gold_ids = qrels.get(q["qid"], []) if qrels is not None else _nugget_gold(q["nuggets"])
        evidence = []
        for cid in gold_ids:
            item = _gold_evidence(cid, domain, prefix, corpus, file_text, counts)
            if item is not None:
                evidence.append(item)
        evidence.sort(key=lambda e: (e.doc_id, e.start if e.start is not None else -1, e.text))
        if not any(e.located for e in evidence):
            counts["questions_dropped_no_located_gold"] += 1
            continue
        questions.append(
            Question(
                qid=q["qid"],
                dataset=name,
                query=q["query"],
                cluster=q["qid"],
                stratum=domain,
                scope=(),
                evidence=tuple(evidence),
                answers=(q["answer"],) if q["answer"].strip() else (),
                nuggets=tuple(text for text, _ in q["nuggets"]),
                reference_answer=q["answer"]
                if q["answer"].strip()
                else "",  # FreshStack's accepted answer, judged in the positive control
            )
        )
    provenance = {"source": f"FreshStack oct-2024 ({domain})", "commit": str(options.commit),
                  "licence": str(options.licence)}
    return DomainData(domain, tuple(questions), texts, tuple(markdown_files(checkout)), counts, provenance)


def _nugget_gold(nuggets) -> list[str]:
    gold: list[str] = []
    for _, ids in nuggets:
        gold.extend(i for i in ids if i not in gold)
    return gold


def _gold_evidence(cid: str, domain: str, prefix: str, corpus: dict, file_text, counts: Counter):
    counts["gold_total"] += 1
    parsed = parse_corpus_id(cid)
    if parsed is None:
        counts["gold_id_malformed"] += 1
        return None
    if not is_markdown(parsed.path):
        counts["gold_non_markdown"] += 1
        return None
    rel = parsed.path[len(prefix):] if prefix and parsed.path.startswith(prefix) else parsed.path
    doc_id = f"{domain}/{rel}"
    expected = corpus.get(cid)
    text = file_text(rel)
    if expected is None:
        counts["gold_not_in_corpus"] += 1
        return Evidence(doc_id, "")
    if text is None:
        counts["gold_file_missing"] += 1
        return Evidence(doc_id, expected)
    if parsed.end > len(text) or parsed.start >= parsed.end:
        counts["gold_out_of_range"] += 1
        return Evidence(doc_id, expected)
    sliced = text[parsed.start:parsed.end]
    if sliced != expected:
        counts["gold_text_mismatch"] += 1
        return Evidence(doc_id, expected)
    counts["gold_located"] += 1
    return Evidence(doc_id, sliced, parsed.start, parsed.end)


def gold_files(questions) -> list[str]:
    """Sorted checkout-relative paths of the located gold of these questions."""
    return sorted({e.doc_id.split("/", 1)[1] for q in questions for e in q.evidence if e.located})


def load(study: Study, name: str, cfg: FreshStackDataset, selection: dict | None,
         reader: InputReader) -> LoadedDataset:
    counts: Counter = Counter(dict.fromkeys(COUNT_KEYS, 0))
    documents, questions = [], []
    for domain, domain_options in sorted(cfg.domains.items()):
        data = convert_domain(study, name, domain, domain_options, reader)
        counts.update(data.counts)
        kept = list(data.questions)
        if selection is None:
            seed = _selection_seed(name, cfg)
            gold = gold_files(kept)
            gold_set = set(gold)
            candidates = [c for c in data.candidates if c not in gold_set]
            distractors = draw_distractors(candidates, len(gold), domain_options.distractor_ratio, seed)
        else:
            entry = selection.get("domains", {}).get(domain)
            if entry is None:
                raise HarnessError(f"dataset `{name}`: the selection has no entry for domain `{domain}`; "
                                   "rerun `harness select`")
            chosen = set(entry["selected"])
            missing = sorted(chosen - {q.qid for q in kept})
            if missing:
                raise HarnessError(f"dataset `{name}`, domain `{domain}`: selected questions not in the "
                                   f"input: {missing[:5]}; rerun `harness select`")
            counts["questions_dropped_not_selected"] += sum(q.qid not in chosen for q in kept)
            kept = [q for q in kept if q.qid in chosen]
            gold = gold_files(kept)
            distractors = list(entry["distractors"])
        pooled = sorted(set(gold) | set(distractors))
        for rel in pooled:
            text = data.texts.get(rel)
            if text is None:
                if not (study.resolve(domain_options.checkout) / rel).is_file():
                    raise HarnessError(f"dataset `{name}`, domain `{domain}`: distractor {rel} is not in the "
                                       "checkout; rerun `harness select`")
                text, changed = reader.read_markdown(study.resolve(domain_options.checkout) / rel)
                counts["documents_crlf_normalised"] += changed
            documents.append(Document(f"{domain}/{rel}", domain, text, dict(data.provenance, path=rel)))
        scope = tuple(f"{domain}/{rel}" for rel in pooled)
        counts["distractors"] += len(distractors)
        counts["gold_files"] += len(gold)
        questions.extend(Question(q.qid, q.dataset, q.query, q.cluster, q.stratum, scope, q.evidence,
                                  q.answers, q.nuggets, q.reference_answer) for q in kept)
    counts["questions"] = len(questions)
    return LoadedDataset(name, cfg.metric_set, tuple(documents), tuple(questions), dict(counts),
                         reader.files)


def _selection_seed(name: str, cfg: FreshStackDataset) -> int:
    if cfg.selection is None:
        raise HarnessError(
            f"dataset `{name}`: selection.seed must be an integer (it seeds the distractor draw)"
        )
    return cfg.selection.seed


def select(study: Study, name: str, cfg: FreshStackDataset, everything: Callable[[], LoadedDataset]) -> dict:
    """Per domain, a seeded sample of the questions with located gold, their gold files and the distractors
    drawn for them (every eligible question is read per domain, so `everything` is not needed)."""
    seed, exclude = seed_and_exclusions(study, name, cfg)
    n_setting = cfg.selection.n_questions
    domains = {}
    for domain, domain_options in sorted(cfg.domains.items()):
        n = n_setting.get(domain, "all") if isinstance(n_setting, dict) else n_setting
        data = convert_domain(study, name, domain, domain_options, InputReader(study.root))
        entry = draw(f"{name}/{domain}", [q.qid for q in data.questions], exclude["ids"], n, seed)
        chosen = set(entry["selected"])
        gold = gold_files([q for q in data.questions if q.qid in chosen])
        ratio = domain_options.distractor_ratio
        gold_set = set(gold)
        candidates = [c for c in data.candidates if c not in gold_set]
        entry |= {
            "commit": str(domain_options.commit),
            "gold_files": gold,
            "distractor_ratio": ratio,
            "distractor_candidates_count": len(candidates),
            "distractors": draw_distractors(candidates, len(gold), ratio, seed),
        }
        domains[domain] = entry
    return {"adapter": "freshstack", "unit": "question", "seed": seed, "exclude": exclude, "domains": domains}


def paths(cfg: FreshStackDataset) -> tuple[str, ...]:
    files = [path for d in cfg.domains.values() for path in (d.queries, d.corpus, d.qrels, d.checkout)]
    return tuple(p for p in files if p is not None) + exclusion_paths(cfg.selection)


def strata(cfg: FreshStackDataset) -> tuple[str, ...]:
    return tuple(cfg.domains)  # the stratum of a question is its domain


ADAPTER = Adapter(load=load, select=select, paths=paths, strata=strata)
