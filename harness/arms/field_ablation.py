"""Field ablations of E, built from E's cached outputs with no LLM call (a robustness analysis, issue 15).

`E-no-<field>` indexes E's rendering without one generated field; `E-only-<field>` with that field
alone (harness.config.arm_kinds.ABLATIONS). The chunks, their boundaries and their generated fields are E's
own (read from E's built chunk set on the same dataset), so the ablation isolates what each field adds. The
source (BuildInputs.source) is the arm named by `of:` (when several arms of kind E apply, e.g. E and its
strong-model twin), else the one arm of kind E configured for the dataset; its inputs hash enters the
ablation's, so rebuilding E makes the ablations stale.
"""

from __future__ import annotations

from dataclasses import replace

from harness.arms.builder import ArmBuilder, ArmChunks, BuildInputs, Render
from harness.arms.render import render_enriched
from harness.config.arm_kinds import ABLATIONS, ENRICHED_FIELDS, ArmKindSpec
from harness.data.model import Chunk
from harness.errors import HarnessError
from harness.files import iter_jsonl, read_json
from harness.grid.paths import chunk_manifest_path, chunks_path


def render_with(keep: tuple[str, ...]) -> Render:
    """E's rendering with only the fields in `keep`; the chunk's generated fields stay whole."""
    def render(chunk: Chunk) -> Chunk:
        g = dict(chunk.generated or {})
        for name in ENRICHED_FIELDS:
            if name not in keep:
                g[name] = [] if isinstance(g.get(name), list) else ""
        return replace(render_enriched(replace(chunk, generated=g)), generated=chunk.generated)
    return render


def build_field_ablation(kind: ArmKindSpec, builder: ArmBuilder, inputs: BuildInputs) -> ArmChunks:
    study, dataset, source = inputs.study, inputs.dataset, inputs.source
    path, mpath = chunks_path(study, dataset, source), chunk_manifest_path(study, dataset, source)
    if not path.is_file() or not mpath.is_file():
        raise HarnessError(f"{dataset}/{inputs.arm}: needs the built chunk set of {source} ({path}); build "
                           f"{source} first (list it before {inputs.arm} under `arms:`)")
    expected = inputs.arm_inputs_hash(source)
    manifest = read_json(mpath)
    if manifest.get("inputs_hash") != expected:
        raise HarnessError(f"{mpath}: {source}'s chunk set was built from other inputs than the current ones; "
                           f"rebuild {source} before {inputs.arm}")
    chunks = [builder.render(Chunk.from_json(r)) for r in iter_jsonl(path)]
    failed = sum(bool((c.generated or {}).get("llm_failed")) for c in chunks)
    return ArmChunks(chunks, {"ablation": {"source_arm": source, "source_inputs_hash": expected,
                                           "fields_kept": list(ABLATIONS[kind.name]),
                                           "chunks_with_failed_generation": failed}})
