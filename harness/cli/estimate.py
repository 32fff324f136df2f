"""`harness estimate`: calls, tokens and dollars of every paid arm before any LLM call, against the cap."""

from __future__ import annotations

import sys

from harness.cli.main import add_study_argument
from harness.cli.output import add_output_arguments
from harness.study import Study
from harness.grid.paths import estimate_path

HELP = 'count the prompt tokens of every paid arm (no LLM call), price them, and check the spend cap'

DESCRIPTION = (
    "Render every prompt each paid arm would send (real templates, chunks, documents and rolling key "
    "dictionary; no model is loaded or called), count its cl100k tokens, add the expected output tokens, "
    "and price both with the model's price_in_per_mtok / price_out_per_mtok. Local backends are not billed "
    "($0). Writes results/estimate.json and prints one line per arm; exit 1 when the total exceeds "
    "llm.spend_cap_usd or a billed model has no prices."
)


def add_arguments(parser) -> None:
    parser.description = DESCRIPTION
    add_study_argument(parser)
    add_output_arguments(parser)
    parser.add_argument(
        "--output-tokens",
        type=int,
        metavar="N",
        help="expected output tokens per call (default: the model's output cap, an upper bound)",
    )
    parser.add_argument("--summary-tokens", type=int, default=60, metavar="N",
                        help="allowance per call for the previous chunk's summary, which the model writes "
                             "(default 60)")


def run(args) -> int:
    from harness.arms.estimate import estimate_study
    from harness.files import atomic_write_json

    study = Study.at(args.study)
    rows = estimate_study(study, output_tokens=args.output_tokens, summary_tokens=args.summary_tokens)
    cap = study.config.llm.spend_cap_usd
    unpriced = [r for r in rows if r.usd is None]
    total = sum(r.usd or 0.0 for r in rows)
    record = {"assumptions": {"output_tokens_per_call": (args.output_tokens if args.output_tokens is not None
                                                        else "the model's output cap"),
                              "summary_tokens_per_call": args.summary_tokens,
                              "tokenizer": "cl100k_base", "retries": "not counted"},
              "arms": [r.to_json() for r in rows], "total_usd": total, "spend_cap_usd": cap,
              "unpriced_arms": [f"{r.dataset}/{r.arm}" for r in unpriced],
              "within_cap": None if cap is None else (not unpriced and total <= cap)}
    atomic_write_json(estimate_path(study), record)
    print(f"{'dataset/arm':<28} {'model':<14} {'calls':>8} {'input tok':>12} {'output tok':>12} {'USD':>10}")
    for r in rows:
        usd = "unpriced" if r.usd is None else ("local $0" if not r.billed else f"{r.usd:.4f}")
        name = (
            r.dataset + '/' + r.arm + (f' x{r.repeats}' if r.repeats > 1 else '')
        )  # repeats: all runs counted
        print(f"{name:<28} {r.model:<14} {r.calls:>8} {r.input_tokens:>12} "
              f"{r.output_tokens:>12} {usd:>10}")
    print(f"total: {sum(r.calls for r in rows)} calls, {sum(r.input_tokens for r in rows)} input and "
          f"{sum(r.output_tokens for r in rows)} output tokens, ${total:.4f}"
          + (f" (+ {len(unpriced)} unpriced arm(s))" if unpriced else ""))
    if unpriced:
        print("error: billed model(s) without price_in_per_mtok / price_out_per_mtok: "
              + ", ".join(record["unpriced_arms"]), file=sys.stderr)
        return 1
    if cap is None:
        print("no spend cap configured (llm.spend_cap_usd)")
        return 0
    if total > cap:
        print(f"error: estimate ${total:.4f} exceeds the study-wide spend cap ${cap:.4f}", file=sys.stderr)
        return 1
    print(f"within the study-wide spend cap ${cap:.4f}")
    return 0
