"""`harness init DIR`: a minimal, runnable, registered study around the user's data.

Everything is written into a staging folder beside DIR and checked there as the stages will read it: the
dataset loaded through its adapter (every malformed line is an error naming the file and line), the config
through its schema and the plan through the plan loader and the freeze's plan check. Only then is the folder
renamed to DIR, so a refused input leaves nothing behind. The plan is then registered by a git commit of
DIR: in the repository DIR lies in, else in DIR's own (init runs `git init`), so the audit can anchor the
plan wherever the study lives; only where git cannot commit, by plan/REGISTRATION.json
(harness.provenance.timeline reads it).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

import harness
from harness.config.metric_sets import METRIC_SETS
from harness.config.arm_kinds import get_kind
from harness.config.datasets import POOLED_SCOPE
from harness.data.common import InputReader
from harness.data.load import LoadedDataset, load_dataset, loss_summary
from harness.data.markdown_folder import DOCS_FOLDER, convert
from harness.errors import HarnessError, InputError
from harness.files import atomic_write_jsonl, atomic_write_text
from harness.grid.arms import arm_prompt_files
from harness.pipeline.scope_choice import ScopeChoice, choose_scope
from harness.pipeline.new_study_files import PAID_ARMS, Layout, Paid, plan_md, plan_yaml, readme, study_yaml
from harness.provenance.plan_check import check_plan_against_config
from harness.provenance.timeline import RECORD_PATH, in_git, utc_iso, write_registration_record
from harness.study import Study

HARNESS_PROMPTS = Path(harness.__file__).resolve().parents[1] / "prompts"  # the templates the demo copies too


@dataclass(frozen=True)
class Inputs:
    """Exactly one source: `documents` + `questions` (JSONL), `markdown` + `questions`, `qasper`, or
    `freshstack` (a folder with one subfolder per domain: queries.jsonl, corpus.jsonl, optional qrels.tsv, and
    checkout/, the docs repository the corpus was cut from)."""

    documents: Path | None = None
    questions: Path | None = None
    markdown: Path | None = None
    qasper: Path | None = None
    freshstack: Path | None = None
    corpus_path_prefix: str = ""  # FreshStack: the corpus ids' leading folder that the checkout lacks
    metric_set: str = "qasper"  # JSONL only: qasper (evidence strings) or freshstack (gold spans)


@dataclass(frozen=True)
class Created:
    root: Path
    registration: str  # how the plan was registered, for the user
    dataset: LoadedDataset
    clusters: int
    evidence: dict[str, int] | None  # Markdown conversion: located and unlocated evidence strings
    links: tuple[str, ...] = ()  # the symbolic links followed out of an input folder, in words
    scope: ScopeChoice | None = None  # the retrieval scope chosen, for adapters that can pool


@dataclass
class _Copies:
    """What init copied into the staging folder: each staged file's source, so an error names the user's
    file rather than the staging copy (which is removed), and the symbolic links followed out of an input
    folder, which init reports (the study then holds a file from elsewhere)."""

    sources: dict[Path, Path] = field(default_factory=dict)
    links: list[str] = field(default_factory=list)

    def copy(self, source: Path, dest: Path, *, what: str, folder: Path | None = None) -> None:
        if not source.is_file():
            raise InputError(f"{what} not found", path=source)
        self.followed(source, folder, "copied into the study")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, dest)
        self.sources[dest] = source

    def followed(self, path: Path, folder: Path | None, how: str) -> None:
        """Note `path` when it lies in `folder` but resolves outside it (a link to elsewhere)."""
        if folder is None:
            return
        real, inside = path.resolve(), folder.resolve()
        if real != inside and inside not in real.parents:
            self.links.append(f"followed a symbolic link out of {folder}: {path} -> {real} ({how})")

    def named_for_user(self, error: HarnessError, staging: Path, target: Path) -> HarnessError:
        """`error` with each staged copy named by its source, and any other staged path by its place in the
        study (the staging folder is gone once the error is shown)."""
        def renamed(text: str) -> str:
            for staged, source in sorted(self.sources.items(), key=lambda item: -len(str(item[0]))):
                text = text.replace(str(staged), str(source))
            return text.replace(str(staging), str(target))

        error.args = tuple(renamed(a) if isinstance(a, str) else a for a in error.args)
        if getattr(error, "path", None) is not None:
            error.path = renamed(str(error.path))
        return error


def create_study(target: Path, inputs: Inputs, *, paid: Paid | None = None,
                 now: dt.datetime | None = None, git: bool = True) -> Created:
    """`git=False` registers by plan/REGISTRATION.json even where git could commit (`init --no-git`)."""
    target = Path(os.path.abspath(target))
    _check_target(target)
    repository = _repository(target) if git else None
    moment = (now or dt.datetime.now(dt.timezone.utc)).replace(microsecond=0)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.init-", dir=target.parent))
    copies = _Copies()
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(staging, 0o777 & ~umask)  # mkdtemp's 0700 would become the study folder's mode
        name = "qasper" if inputs.qasper else "freshstack" if inputs.freshstack else "corpus"
        entry, metric_set, evidence = _stage_data(staging, inputs, copies)
        layout = Layout(
            study=target.name,
            dataset=name,
            entry=entry,
            metric_set=metric_set,
            cluster="cluster",
            stratified=bool(inputs.freshstack),
            paid=paid,
            registered_at=utc_iso(moment),
        )
        atomic_write_text(staging / "configs" / "study.yaml", study_yaml(layout))
        study = Study.at(staging)
        dataset = load_dataset(study, name, selection=None)  # the adapter's checks, before anything is kept
        if not dataset.questions:
            raise InputError(f"no question reaches the study: {loss_summary(name, dataset.counts)}",
                             path=inputs.questions or inputs.qasper or inputs.freshstack)
        scope = None
        if hasattr(study.config.datasets[name], "retrieval_scope"):  # the adapters that can pool
            scope = choose_scope(dataset, METRIC_SETS[metric_set].reader_budget)
            if scope.scope == POOLED_SCOPE:
                layout = replace(layout, entry={**layout.entry, "retrieval_scope": POOLED_SCOPE})
                atomic_write_text(staging / "configs" / "study.yaml", study_yaml(layout))
                dataset = load_dataset(Study.at(staging), name, selection=None)
        layout = replace(layout, cluster=_cluster_unit(dataset, qasper=bool(inputs.qasper)))
        atomic_write_text(staging / "plan" / "plan.yaml", plan_yaml(layout))
        atomic_write_text(staging / "plan" / "PLAN.md", plan_md(layout))
        if paid:
            _copy_prompts(staging, copies)
        _validate(Study.at(staging))
        registration = {
            ENCLOSING: "a git commit",
            OWN: "a git commit in the study's own repository (git init)",
            None: f"{RECORD_PATH}, as git cannot commit here" if git else f"{RECORD_PATH} (--no-git)",
        }[repository]
        # absolute: `make` runs from the harness repository, wherever init ran
        atomic_write_text(staging / "README.md", readme(layout, registration=registration, where=str(target)))
        if target.is_dir():
            target.rmdir()  # checked empty above
        os.rename(staging, target)
    except HarnessError as e:
        shutil.rmtree(staging, ignore_errors=True)
        raise copies.named_for_user(e, staging, target) from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    how = _register(target, repository, moment)
    clusters = len({q.cluster for q in dataset.questions})
    return Created(target, how, dataset, clusters, evidence, tuple(copies.links), scope)


def _check_target(target: Path) -> None:
    if target.exists() and not target.is_dir():
        raise HarnessError(f"{target}: exists and is not a folder")
    if target.is_dir() and any(target.iterdir()):
        raise HarnessError(
            f"{target}: not empty; `harness init` writes a new study into an empty or new folder"
        )
    if not target.parent.is_dir():
        raise HarnessError(f"{target.parent}: no such folder (create it first)")


ENCLOSING, OWN = "enclosing", "own"  # where init commits the registration


def _repository(target: Path) -> str | None:
    """Where the study's registration will be committed: ENCLOSING (its folder lies in a git work tree and is
    not ignored there), OWN (elsewhere: init makes the study its own repository, so the audit can anchor the
    plan), or None (git is not installed, or cannot commit outside a repository: plan/REGISTRATION.json).
    In an enclosing repository git must know who commits, checked now so a missing identity stops init
    before anything is written."""
    if in_git(target.parent):
        ignored = subprocess.run(["git", "-C", str(target.parent), "check-ignore", "-q", str(target)],
                                 capture_output=True, check=False)
        if ignored.returncode != 0:
            ident = subprocess.run(["git", "-C", str(target.parent), "var", "GIT_COMMITTER_IDENT"],
                                   capture_output=True, check=False)
            if ident.returncode != 0:
                raise HarnessError(f"{target.parent} is in a git repository, but git does not know who "
                                   "commits (set user.name and user.email with `git config`); the plan is "
                                   "registered by a commit")
            return ENCLOSING
    if shutil.which("git") is None:
        return None
    ident = subprocess.run(["git", "var", "GIT_COMMITTER_IDENT"], cwd=target.parent, capture_output=True,
                           check=False)
    return OWN if ident.returncode == 0 else None


def _stage_data(root: Path, inputs: Inputs, copies: _Copies) -> tuple[dict, str, dict[str, int] | None]:
    """Copy or convert the inputs under root/data/; the dataset's `datasets:` entry, metric set and, for
    Markdown, the evidence counts."""
    data = root / "data"
    if inputs.freshstack:
        return (
            _stage_freshstack(data, inputs.freshstack, inputs.corpus_path_prefix, copies),
            "freshstack",
            None,
        )
    if inputs.qasper:
        copies.copy(inputs.qasper, data / "qasper" / inputs.qasper.name, what="Qasper file")
        return ({"adapter": "qasper", "metric_set": "qasper", "files": [f"data/qasper/{inputs.qasper.name}"]},
                "qasper", None)
    entry = {"adapter": "jsonl", "metric_set": inputs.metric_set,
             "documents": "data/documents.jsonl", "questions": "data/questions.jsonl"}
    if inputs.markdown:
        converted = convert(inputs.markdown, inputs.questions, domain="docs")
        for rel, source in converted.files.items():
            copies.copy(source, data / DOCS_FOLDER / rel, what="Markdown file", folder=inputs.markdown)
        atomic_write_jsonl(data / "documents.jsonl", converted.documents)
        atomic_write_jsonl(data / "questions.jsonl", converted.questions)
        return entry | {"metric_set": "qasper"}, "qasper", converted.counts
    copies.copy(inputs.documents, data / "documents.jsonl", what="documents file")
    copies.copy(inputs.questions, data / "questions.jsonl", what="questions file")
    for rel in _document_bodies(inputs.documents):
        source = inputs.documents.parent / rel
        if source.is_file():  # a missing body is the adapter's error, naming the line
            copies.copy(source, data / rel, what="Markdown file", folder=inputs.documents.parent)
    return entry, inputs.metric_set, None


def _stage_freshstack(data: Path, folder: Path, prefix: str, copies: _Copies) -> dict:
    """queries, corpus and qrels copied per domain; the checkout stays where it is (a repository, often
    large),
    named by its absolute path and pinned by its HEAD commit, which the freeze records."""
    if not folder.is_dir():
        raise InputError("not a folder of FreshStack domains", path=folder)
    domains = {}
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        options = {}
        for key, file in (("queries", "queries.jsonl"), ("corpus", "corpus.jsonl"), ("qrels", "qrels.tsv")):
            if key != "qrels" or (sub / file).is_file():
                copies.copy(sub / file, data / "freshstack" / sub.name / file, what=f"FreshStack {key} file",
                            folder=folder)
                options[key] = f"data/freshstack/{sub.name}/{file}"
        checkout = (sub / "checkout").resolve()
        if not checkout.is_dir():
            raise InputError("no checkout/ folder (the docs repository the corpus was cut from)", path=sub)
        copies.followed(sub / "checkout", folder, "the config names the checkout by that path")
        head = subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
        )
        options |= {"checkout": str(checkout), "commit": head.stdout.strip() if head.returncode == 0 else "",
                    "corpus_path_prefix": prefix}
        domains[sub.name] = options
    if not domains:
        raise InputError(
            "holds no domain folder (each with queries.jsonl, corpus.jsonl and checkout/)", path=folder
        )
    return {"adapter": "freshstack", "metric_set": "freshstack", "domains": domains}


def _document_bodies(documents: Path) -> list[str]:
    """The `path` of every documents.jsonl line; each must stay inside the file's folder, as it is copied."""
    out = []
    for line, row in InputReader(documents.parent).iter_jsonl(documents):
        rel = row.get("path")
        if not isinstance(rel, str):
            continue  # inline `text`, or a malformed line the adapter reports
        if Path(rel).is_absolute() or os.path.normpath(rel).startswith(".."):
            raise InputError(
                f"`path` {rel!r} leaves the folder of documents.jsonl; `harness init` copies the "
                "corpus into the study, so every body must lie under that folder",
                path=documents,
                record=f"line {line}",
            )
        out.append(rel)
    return out


def _cluster_unit(dataset: LoadedDataset, *, qasper: bool) -> str:
    """The plan's name for the resampling unit, from what the clusters are."""
    if qasper:
        return "paper"
    if all(q.cluster == q.qid for q in dataset.questions):
        return "question"
    if all(q.scope == (q.cluster,) for q in dataset.questions):
        return "document"
    return "cluster"


def _copy_prompts(root: Path, copies: _Copies) -> None:
    for arm in PAID_ARMS:
        for name in get_kind(arm).prompts.values():
            copies.copy(HARNESS_PROMPTS / name, root / "prompts" / name, what="the harness's prompt template")


def _validate(study: Study) -> None:
    """The config's schema, the plan loader and the freeze's plan check; each paid arm's prompts exist."""
    check_plan_against_config(study)
    for arm in study.arms:
        arm_prompt_files(study, arm)


def _register(root: Path, repository: str | None, moment: dt.datetime) -> str:
    if repository is None:
        write_registration_record(root, ["plan/plan.yaml", "plan/PLAN.md"], moment)
        return f"{RECORD_PATH} (no git commit holds the study; commit it, or publish the frozen hash)"
    if repository == OWN:
        proc = subprocess.run(["git", "init", "-q", str(root)], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise HarnessError(f"{root}: the study is written, but `git init` failed: {proc.stderr.strip()}; "
                               "make it a repository and commit it to register the plan")
    git = ["git", "-C", str(root)]
    for command in (git + ["add", "--", "."],
                    git + ["commit", "-q", "-m", f"Register study {root.name} (harness init)", "--", "."]):
        proc = subprocess.run(command, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise HarnessError(
                f"{root}: the study is written, but `{' '.join(command[3:5])}` failed: "
                f"{proc.stderr.strip() or proc.stdout.strip()}; commit the folder to register the plan"
            )
    commit = subprocess.run(
        git + ["rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, check=False
    )
    own = " in the study's own repository (git init)" if repository == OWN else ""
    return f"git commit {commit.stdout.strip()}{own}"
