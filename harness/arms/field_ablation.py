"""Field ablations of E, built from E's cached outputs with no LLM call (a robustness analysis, issue 15).

`E-no-<field>` indexes E's rendering without one generated field; `E-only-<field>` with that field
alone. The chunks, their boundaries and their generated fields are E's own (read from E's built chunk
set on the same dataset), so the ablation isolates what each field adds. The source is the arm named by
`of:` (when several arms of kind E apply, e.g. E and its strong-model twin), else the one arm of kind E
configured for the dataset; its inputs hash enters the ablation's, so rebuilding E makes the ablations stale.
"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

from harness.arms.render import render_enriched
from harness.data.model import Chunk
from harness.errors import HarnessError
from harness.files import iter_jsonl, read_json
from harness.grid.paths import chunk_manifest_path, chunks_path

FIELDS = ("title", "summary", "keywords", "questions")  # what the E rendering indexes
SOURCE_KIND = "E"
ABLATIONS: dict[str, tuple[str, ...]] = {
    **{f"E-no-{f}": tuple(x for x in FIELDS if x != f) for f in FIELDS},
    **{f"E-only-{f}": (f,) for f in FIELDS},
}


def render_with(keep: tuple[str, ...]):
    """E's rendering with only the fields in `keep`; the chunk's generated fields stay whole."""
    def render(chunk: Chunk) -> Chunk:
        g = dict(chunk.generated or {})
        for name in FIELDS:
            if name not in keep:
                g[name] = [] if isinstance(g.get(name), list) else ""
        return replace(render_enriched(replace(chunk, generated=g)), generated=chunk.generated)
    return render


def source_arm(study: Any, dataset: str, arm: str) -> str:
    """The arm `of:` names, else the one configured arm of kind E that applies to `dataset`. E's robustness
    variants (another prompt, repeated generations) are not E's outputs and are never re-rendered."""
    from harness.grid.cells import applies_to

    found = [name for name, cfg in study.arms.items() if cfg.kind == SOURCE_KIND and applies_to(cfg, dataset)
             and not getattr(cfg, "prompts", None) and not getattr(cfg, "repeats", None)]
    of = getattr(study.arms[arm], "of", None)
    if of is not None:
        if of not in found:
            raise HarnessError(f"{study.config_path}: arm `{arm}`: `of: {of}` must name an arm of kind "
                               f"{SOURCE_KIND} built on dataset {dataset} (those: {', '.join(found) or 'none'})")
        return of
    if len(found) != 1:
        raise HarnessError(f"{study.config_path}: arm `{arm}` re-renders the chunks of the one arm of kind "
                           f"{SOURCE_KIND} on dataset {dataset}, but {len(found)} apply ({', '.join(found) or 'none'}); "
                           "name one with `of:`")
    return found[0]


def source_inputs_hash(study: Any, dataset: Any, arm: str) -> str:
    from harness.arms.build import inputs_hash

    return inputs_hash(study, dataset, source_arm(study, dataset.name, arm))


def build_field_ablation(kind, inputs) -> Any:
    from harness.arms.registry import ArmChunks

    study, dataset = inputs.study, inputs.dataset
    source = source_arm(study, dataset, inputs.arm)
    path, mpath = chunks_path(study, dataset, source), chunk_manifest_path(study, dataset, source)
    if not path.is_file() or not mpath.is_file():
        raise HarnessError(f"{dataset}/{inputs.arm}: needs the built chunk set of {source} ({path}); build "
                           f"{source} first (list it before {inputs.arm} under `arms:`)")
    expected = source_inputs_hash(study, SimpleNamespace(name=dataset, documents=inputs.documents), inputs.arm)
    manifest = read_json(mpath)
    if manifest.get("inputs_hash") != expected:
        raise HarnessError(f"{mpath}: {source}'s chunk set was built from other inputs than the current ones; "
                           f"rebuild {source} before {inputs.arm}")
    chunks = [kind.render(Chunk.from_json(r)) for r in iter_jsonl(path)]
    failed = sum(bool((c.generated or {}).get("llm_failed")) for c in chunks)
    return ArmChunks(chunks, {"ablation": {"source_arm": source, "source_inputs_hash": expected,
                                           "fields_kept": list(ABLATIONS[kind.name]),
                                           "chunks_with_failed_generation": failed}})
