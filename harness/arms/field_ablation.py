"""Re-renderings of E, built from E's cached outputs with no LLM call: field ablations (a robustness analysis,
docs/analyses.md) and E with a field it does not index added (exploratory indexing, amendment 0003).

`E-no-<field>` indexes E's rendering without one generated field; `E-only-<field>` with that field
alone (harness.config.arm_kinds.ABLATIONS); `E+keys` and `E+entities` add the key or the entities after E's
fields (INDEXED_EXTRAS). The manifest records which fields each indexes. The chunks, their boundaries and
their generated fields are E's own (read from E's built chunk set on the same dataset), so the ablation
isolates
what each field adds. The
source (BuildInputs.source) is the arm named by `of:` (when several arms of kind E apply, e.g. E and its
strong-model twin), else the one arm of kind E configured for the dataset; its inputs hash enters the
ablation's, so rebuilding E makes the ablations stale.
"""

from __future__ import annotations

from harness.arms.builder import ArmBuilder, ArmChunks, BuildInputs, Render
from harness.arms.render import render_fields
from harness.config.arm_kinds import ABLATIONS, RERENDERINGS, ArmKindSpec
from harness.data.model import Chunk
from harness.errors import HarnessError
from harness.files import iter_jsonl, read_json
from harness.grid.paths import chunk_manifest_path, chunks_path


def render_with(fields: tuple[str, ...]) -> Render:
    """A rendering that indexes the generated `fields` in order; the chunk's generated fields stay whole."""
    def render(chunk: Chunk) -> Chunk:
        return render_fields(chunk, fields)
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
        raise HarnessError(
            f"{mpath}: {source}'s chunk set was built from other inputs than the current ones; "
            f"rebuild {source} before {inputs.arm}"
        )
    chunks = [builder.render(Chunk.from_json(r)) for r in iter_jsonl(path)]
    failed = sum(bool((c.generated or {}).get("llm_failed")) for c in chunks)
    ablation = kind.name in ABLATIONS  # an ablation's record keeps its earlier name and field list key
    fields = {"fields_kept" if ablation else "fields_indexed": list(RERENDERINGS[kind.name])}
    return ArmChunks(
        chunks,
        {
            "ablation" if ablation else "rerendering": {
                "source_arm": source,
                "source_inputs_hash": expected,
                **fields,
                "chunks_with_failed_generation": failed,
            }
        },
    )
