"""The add-on arms' descriptives (paper section 4.6 and Appendix N): merges per document, key reuse with
and without the dictionary, merged chunks over 512 tokens, RM/SM shortfalls, M-TP mapping outcomes and
chunks inserted per expansion. Read from the build manifests (`addon`) and the score sidecars."""

from __future__ import annotations

from harness.arms.consolidate import OUTCOMES
from harness.grid.arms import arm_kind
from harness.grid.cells import chunk_sets, configured_cells
from harness.grid.states import chunk_set_manifest
from harness.report.context import ReportContext
from harness.report.model import Missing, Section, table


def _distribution(d: dict) -> str:
    return ", ".join(f"{k}: {v}" for k, v in d.items()) or "–"


def _merge_row(dataset: str, arm: str, addon: dict, record: dict) -> list:
    per_doc = record["merges_per_document"]
    short = record.get("shortfall")
    long_ = addon["long_merged"]
    return [
        dataset,
        arm,
        addon["of"],
        per_doc["total"],
        f"{per_doc['mean']:.2f}",
        _distribution(per_doc["distribution"]),
        f"{long_['over_limit']}/{long_['merged_chunks']}",
        "–"
        if short is None
        else f"{short['merges_short']} in {short['documents_short']} of {short['documents']} docs",
    ]


def addon_arms(ctx: ReportContext) -> Section | None:
    """None (no section) for a study without add-on arms."""
    if not any(arm_kind(ctx.study, arm).of_required for arm in ctx.study.arms):
        return None
    sec = Section("addon-arms", "Add-on arms: merging, consolidation and expansion")
    merges, reuse, outcomes, unbuilt = [], [], [], []
    for cs in chunk_sets(ctx.study):
        if not cs.arm.kind.of_required:  # field ablations are derived, not add-ons
            continue
        dataset, arm = cs.names
        manifest = chunk_set_manifest(ctx.study, cs)
        if manifest is None or "addon" not in manifest:
            unbuilt.append(str(cs))
            continue
        addon = manifest["addon"]
        if "per_seed" in addon:  # RM: one row per seed
            merges += [
                _merge_row(dataset, f"{arm} ({seed})", addon, r) for seed, r in addon["per_seed"].items()
            ]
        else:
            merges.append(_merge_row(dataset, arm, addon, addon))
        if "source_key_reuse_rate" in addon:
            of_kind = arm_kind(ctx.study, addon["of"]).name
            row = [dataset, addon["of"], of_kind, f"{100 * addon['source_key_reuse_rate']:.1f}%"]
            if row not in reuse:
                reuse.append(row)
        if "mapping_outcomes" in addon:
            outcomes.append([dataset, arm, *(addon["mapping_outcomes"][n] for n in OUTCOMES)])
    if unbuilt:
        sec.missing.append(Missing("add-on chunk sets " + ", ".join(unbuilt), "make build-arms"))
    if merges:
        sec.tables.append(
            table(
                "addon-merges",
                "Merges per document (M, and the count-matched controls RM per seed and SM), merged "
                "chunks over 512 tokens, and merges short of M's count per document (RM, SM; never made up "
                "silently).",
                [
                    "dataset",
                    "arm",
                    "of",
                    "merges",
                    "per doc",
                    "distribution (merges: docs)",
                    "merged > 512 tok",
                    "shortfall",
                ],
                merges,
            )
        )
    if reuse:
        sec.tables.append(
            table(
                "addon-key-reuse",
                "Key reuse rate pooled over chunks: the share of keyed chunks whose key an earlier "
                "chunk of the document already had, for the arm merged from (E: with the key dictionary, "
                "E-K: without).",
                ["dataset", "arm", "kind", "key reuse"],
                reuse,
            )
        )
    if outcomes:
        sec.tables.append(
            table(
                "addon-mapping",
                "M-TP mapping outcomes per key (kept: mapped to itself; remapped: to another listed "
                "key; invalid: to a key not listed; missing: not in the answer; unparseable: no usable "
                "answer). Only "
                "kept and remapped change a key.",
                ["dataset", "arm", *OUTCOMES],
                outcomes,
            )
        )
    sec.tables += _expansion_tables(ctx, sec)
    return sec


def _expansion_tables(ctx: ReportContext, sec: Section) -> list:
    cells = [c for c in configured_cells(ctx.study) if c.arm.retrieval_time]
    rows, missing = [], []
    for cell in cells:
        counts = ctx.cell_counts(cell.dataset.name).get(str(cell), {}).get("inserted_per_expansion")
        if counts is None:
            missing.append(str(cell))
            continue
        rows.append([*cell.names, counts["units"], counts["total"], f"{counts['mean']:.2f}",
                     _distribution(counts["distribution"])])
    if missing:
        sec.missing.append(Missing("insertion counts of expansion cells " + ", ".join(missing), "make score"))
    if not rows:
        return []
    return [
        table(
            "addon-expansion",
            "Chunks inserted per expansion: after each retrieved chunk placed within the "
            "run depth of the expanded list, how many chunks were inserted (pooled over questions).",
            [
                "dataset",
                "arm",
                "retriever",
                "expansions",
                "inserted",
                "mean",
                "distribution (inserted: count)",
            ],
            rows,
        )
    ]
