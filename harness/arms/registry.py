"""How each declared arm kind (harness.config.arm_kinds) is built and rendered, and the build dispatch.

BUILDERS has exactly the declared kinds as keys. A planned kind and a kind expanded at retrieval time have a
rendering but no `build`: building one fails naming the arm.
"""

from __future__ import annotations

from functools import partial

from harness.arms import addon_arms, lab_arms
from harness.arms.plugin_arms import build_outside, library_class, python_function
from harness.arms.builder import ArmBuilder, ArmChunks, BuildInputs
from harness.arms.chunker_arms import build_chunked
from harness.arms.field_ablation import build_field_ablation, render_with
from harness.arms.headers import add_contextual_headers
from harness.arms.llm_arms import build_llm_kind
from harness.arms.render import render_context, render_enriched, render_section_path, render_text
from harness.chunking import library_splitters
from harness.config.arm_kinds import RERENDERINGS, ArmKindSpec, get_kind
from harness.config.arm_settings import wants_contextual_headers
from harness.data.model import Chunk
from harness.errors import HarnessError


def _keep_indexed(chunk: Chunk) -> Chunk:
    return chunk if chunk.indexed_text else render_text(chunk)


def _lab(chunker, render=render_text) -> ArmBuilder:
    return ArmBuilder(render, lab_arms.build_lab_arm, lab_chunker=chunker)


def _outside(make_cutter) -> ArmBuilder:
    return ArmBuilder(render_text, partial(build_outside, make_cutter))


def _addon(merging) -> ArmBuilder:
    return ArmBuilder(render_enriched, partial(addon_arms.build_derived, merging))


_CHUNKED = ArmBuilder(render_text, build_chunked)
_ENRICHED_LLM = ArmBuilder(render_enriched, build_llm_kind)
_NOT_BUILT = ArmBuilder(render_enriched)  # expanded at retrieval time

BUILDERS: dict[str, ArmBuilder] = {
    "S": _CHUNKED,
    "S+T": ArmBuilder(render_section_path, build_chunked),
    "F512c": _CHUNKED,
    "F256t": _CHUNKED,
    "P": _CHUNKED,
    "FL": _CHUNKED,
    "fixed": _lab(lab_arms.fixed_chunks),
    "sentence": _lab(lab_arms.sentence_chunks),
    # provisions render their heading path (and resolved references) into indexed_text themselves
    "provisions": _lab(lab_arms.provisions, render=_keep_indexed),
    "qes-dp": _lab(lab_arms.qes_dp),
    "qes-greedy": _lab(lab_arms.qes_greedy),
    "python": _outside(python_function),
    "langchain": _outside(library_class(library_splitters.langchain, "splitter")),
    "llamaindex": _outside(library_class(library_splitters.llamaindex, "parser")),
    "chonkie": _outside(library_class(library_splitters.chonkie, "chunker")),
    "E": _ENRICHED_LLM,
    "E-K": _ENRICHED_LLM,
    "CR": ArmBuilder(render_context, build_llm_kind),
    "PF": _ENRICHED_LLM,
    "M": _addon(addon_arms.key_merge),
    "RM": _addon(addon_arms.random_merge),
    "SM": _addon(addon_arms.similarity_merge),
    "M-TP": _addon(addon_arms.consolidated_merge),
    "E+KX": _NOT_BUILT,
    "E+AX": _NOT_BUILT,
    "E+SX": _NOT_BUILT,
    **{name: ArmBuilder(render_with(fields), build_field_ablation) for name, fields in RERENDERINGS.items()},
}


def build_chunks(kind: ArmKindSpec, inputs: BuildInputs) -> ArmChunks:
    """The chunk set of an arm of `kind`, with the contextual headers an arm may ask for."""
    kind.require_implemented(inputs.arm or kind.name)
    builder = BUILDERS[kind.name]
    if builder.build is None:
        raise HarnessError(
            f"arm `{inputs.arm or kind.name}` (kind {kind.name}) is expanded at retrieval time "
            "and has no chunk set to build"
        )
    built = builder.build(kind, builder, inputs)
    if not wants_contextual_headers(inputs.arm_config):
        return built
    # an option of every kind, applied after the kind's own rendering (harness.arms.headers)
    chunks, counts = add_contextual_headers(built.chunks, inputs.documents, arm=inputs.arm or kind.name)
    return ArmChunks(chunks, {**built.manifest, "contextual_headers": counts})


def render(kind: str, chunk: Chunk) -> Chunk:
    return BUILDERS[get_kind(kind).name].render(chunk)
