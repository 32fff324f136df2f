"""The arm registry: one spec per arm kind (DESIGN section 4), the only place that names arm kinds.

A config arm is `{kind: <name here>, ...}`. Each kind says how it is built (its builder), how its
chunks are rendered into indexed text, how many LLM calls it makes and which inputs it needs. Kinds the
plan names but no builder exists for yet are registered as planned: they resolve (the config may name
them, freeze records them), and building one fails naming the arm.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from harness.arms.field_ablation import ABLATIONS, render_with
from harness.arms.render import render_context, render_enriched, render_section_path, render_text
from harness.chunking import chunk_document, params_from_config
from harness.chunking.windows import median_token_length
from harness.config.arms import wants_contextual_headers
from harness.config.lab import ProvisionsArm, QesDpArm, QesGreedyArm, WindowArm
from harness.data.model import Chunk, Document, Question
from harness.errors import HarnessError, InputError
from harness.study import Study

HEADER_LED = "header-led"
# how an LLM kind annotates header-led chunks (harness.arms.llm_arms dispatches on it)
ENRICH, ENRICH_WITHOUT_KEYS, CONTEXTUAL, PER_FIELD = "enrich", "enrich without keys", "contextual", "per field"


@dataclass(frozen=True)
class BuildInputs:
    """What a builder may read. `header_chunks` gives the header-led chunks per doc_id, computed once per
    dataset and shared (S, S+T, FL's window length, and every LLM arm chunk from them)."""

    documents: Sequence[Document]
    chunking: Any  # the typed `chunking:` section (harness.config.chunking.Chunking)
    header_chunks: Callable[[], Mapping[str, list[Chunk]]]
    study: Study | None = None  # for kinds that need a model, prompts and the llm settings
    arm: str = ""
    arm_config: Mapping[str, Any] = field(default_factory=dict)
    progress: bool = True
    fl_tokens: int | None = None  # FL window length; default: the median S chunk length
    dataset: str | None = None  # per-dataset model limits (harness.arms.model_limits)
    fresh: bool = False  # LLM kinds: regenerate instead of reading the cache
    replay: bool = False  # LLM kinds: answer only from the cache, never call a model
    questions: Sequence[Question] = ()  # supervised kinds (QES) read the training split only
    # derived kinds (`of:`): the built chunk set of another arm of this dataset (harness.arms.build reads it)
    read_arm: Callable[[str], list[Chunk]] | None = None


@dataclass(frozen=True)
class ArmChunks:
    chunks: list[Chunk]  # corpus order, indexed_text rendered
    manifest: dict[str, Any]  # extra fields for the chunk set's manifest


@dataclass(frozen=True)
class ArmKind:
    name: str
    boundaries: str  # chunker in harness.chunking.CHUNKERS whose chunks the kind starts from (lab kinds: itself)
    rendering: Callable[[Chunk], Chunk]
    calls_per_chunk: int = 0
    calls_per_document: int = 0
    prompts: Mapping[str, str] = field(default_factory=dict)  # role -> template file under prompts/
    needs_model: bool = False
    needs_s_chunks: bool = False  # FL measures its window on the S chunks
    annotation: str | None = None  # LLM kinds: ENRICH, ENRICH_WITHOUT_KEYS, CONTEXTUAL or PER_FIELD
    builder: Callable[["ArmKind", BuildInputs], ArmChunks] | None = None  # None: planned, not built yet
    settings: type | None = None  # its own config schema (lab kinds); None: chosen by needs_model / planned
    trains_on_questions: bool = False  # supervised: built from the training split's evidence (QES)
    lab_chunker: Callable[..., list[Chunk]] | None = None  # lab kinds: fn(settings, doc, training spans)
    derived: bool = False  # starts from the chunks of the arm its config names under `of:`
    expansion: str | None = None  # KX, AX or SX: expanded at retrieval time, no chunk set of its own
    requires: tuple[str, ...] = ()  # derived kinds: the config keys an arm of this kind must set
    source_kind: str | None = None  # field ablations: the kind whose built chunk set they re-render (E)

    @property
    def implemented(self) -> bool:
        return self.builder is not None or self.expansion is not None

    @property
    def retrieval_time(self) -> bool:
        return self.expansion is not None

    @property
    def llm_free(self) -> bool:
        return not self.needs_model

    def render(self, chunk: Chunk) -> Chunk:
        return self.rendering(chunk)

    def require_implemented(self, arm: str) -> None:
        if not self.implemented:
            raise HarnessError(
                f"arm `{arm}` has kind {self.name!r}, which the plan names but this harness does not implement "
                f"yet (buildable kinds: {', '.join(buildable_kinds())})"
            )

    def build(self, inputs: BuildInputs) -> ArmChunks:
        self.require_implemented(inputs.arm or self.name)
        if self.builder is None:
            raise HarnessError(f"arm `{inputs.arm or self.name}` (kind {self.name}) is expanded at retrieval time "
                               "and has no chunk set to build")
        built = self.builder(self, inputs)
        if not wants_contextual_headers(inputs.arm_config):
            return built
        # an option of every kind, applied after the kind's own rendering (harness.arms.headers)
        from harness.arms.headers import add_contextual_headers

        chunks, counts = add_contextual_headers(built.chunks, inputs.documents, arm=inputs.arm or self.name)
        return ArmChunks(chunks, {**built.manifest, "contextual_headers": counts})


def _build_llm_free(kind: ArmKind, inputs: BuildInputs) -> ArmChunks:
    extra: dict[str, Any] = {}
    if kind.boundaries == HEADER_LED:
        by_doc = inputs.header_chunks()
        raw = [c for d in inputs.documents for c in by_doc[d.doc_id]]
    else:
        params = params_from_config(kind.boundaries, inputs.chunking)
        if kind.needs_s_chunks:
            tokens = inputs.fl_tokens
            if tokens is None:
                by_doc = inputs.header_chunks()
                tokens = median_token_length([c for d in inputs.documents for c in by_doc[d.doc_id]])
            params = {"tokens": tokens}
            extra["fl_window_tokens"] = tokens
        raw = [c for d in inputs.documents for c in chunk_document(kind.boundaries, d, **params)]
    extra["chunker"] = kind.boundaries
    return ArmChunks([kind.render(c) for c in raw], extra)


def _build_lab(kind: ArmKind, inputs: BuildInputs) -> ArmChunks:
    from harness.arms.lab_arms import doc_training, training_record

    training = training_record(inputs.arm or kind.name, inputs.questions) if kind.trains_on_questions else {}
    cfg = inputs.arm_config
    if not isinstance(cfg, kind.settings):  # `harness chunk` passes a plain mapping: fill the defaults in
        from harness.config.fields import Where, build

        cfg = build(kind.settings, {"kind": kind.name, **cfg}, Where(None, ("arms", inputs.arm or kind.name)))
    if isinstance(cfg.L, tuple):
        raise HarnessError(f"arm `{inputs.arm}`: `L` is a sweep {list(cfg.L)}; build the expanded arms (<arm>@L<value>)")
    raw = [c for d in inputs.documents for c in kind.lab_chunker(cfg, d, doc_training(training, d.doc_id))]
    extra: dict[str, Any] = {"chunker": kind.name, "L": cfg.L}
    if kind.trains_on_questions:
        extra["training_questions_per_document"] = {d: len(v) for d, v in training.items()}
    return ArmChunks([kind.render(c) for c in raw], extra)


def _lab(name: str, settings: type, chunker: str, rendering=render_text, **kw) -> ArmKind:
    from harness.arms import lab_arms

    return ArmKind(name, name, rendering, builder=_build_lab, settings=settings,
                   lab_chunker=getattr(lab_arms, chunker), **kw)


def _keep_indexed(chunk: Chunk) -> Chunk:
    return chunk if chunk.indexed_text else render_text(chunk)


def _build_with_llm(kind: ArmKind, inputs: BuildInputs) -> ArmChunks:
    # imported here: the LLM layer is needed only when an LLM arm is actually built
    from harness.arms.llm_arms import build_llm_arm

    result = build_llm_arm(inputs.study, inputs.arm, inputs.arm_config, inputs.documents, inputs.header_chunks(),
                           progress=inputs.progress, dataset=inputs.dataset, fresh=inputs.fresh, replay=inputs.replay)
    return ArmChunks(result.chunks, {"llm": result.manifest})


def _addon_builder(function: str) -> Callable[[ArmKind, BuildInputs], ArmChunks]:
    def build(kind: ArmKind, inputs: BuildInputs) -> ArmChunks:
        # imported here: the add-on builders import the merge modules and, for M-TP, the LLM layer
        from harness.arms import addon_arms

        return addon_arms.build_derived(getattr(addon_arms, function), kind, inputs)

    return build


def _derived(name: str, function: str, **kw) -> ArmKind:
    return ArmKind(name, HEADER_LED, render_enriched, builder=_addon_builder(function), derived=True, **kw)


def _expansion(name: str, mode: str) -> ArmKind:
    return ArmKind(name, HEADER_LED, render_enriched, derived=True, expansion=mode)


def _build_field_ablation(kind: ArmKind, inputs: BuildInputs) -> ArmChunks:
    from harness.arms.field_ablation import build_field_ablation

    return build_field_ablation(kind, inputs)


def _ablation(name: str, keep: tuple[str, ...]) -> ArmKind:
    """E re-rendered with only `keep` of its fields, from E's built chunks: no LLM call."""
    return ArmKind(name, HEADER_LED, render_with(keep), builder=_build_field_ablation, source_kind="E")


def _free(name: str, boundaries: str, rendering, **kw) -> ArmKind:
    return ArmKind(name, boundaries, rendering, builder=_build_llm_free, **kw)


def _llm(name: str, rendering, annotation: str, prompts: Mapping[str, str], calls_per_chunk: int) -> ArmKind:
    return ArmKind(name, HEADER_LED, rendering, calls_per_chunk=calls_per_chunk, prompts=prompts, needs_model=True,
                   annotation=annotation, builder=_build_with_llm)


PF_PROMPTS = {name: f"pf_{name}.txt" for name in ("title", "summary", "keywords", "questions")}

KINDS: dict[str, ArmKind] = {k.name: k for k in (
    _free("S", HEADER_LED, render_text),
    _free("S+T", HEADER_LED, render_section_path),
    _free("F512c", "F512c", render_text),
    _free("F256t", "F256t", render_text),
    _free("P", "P", render_text),
    _free("FL", "FL", render_text, needs_s_chunks=True),
    # the chunking lab (issue 16): `L` may be a list (a chunk-size sweep, harness.config.lab.expand_sweeps)
    _lab("fixed", WindowArm, "fixed_chunks"),
    _lab("sentence", WindowArm, "sentence_chunks"),
    # provisions render their heading path (and resolved references) into indexed_text themselves
    _lab("provisions", ProvisionsArm, "provisions", rendering=_keep_indexed),
    _lab("qes-dp", QesDpArm, "qes_dp", trains_on_questions=True),
    _lab("qes-greedy", QesGreedyArm, "qes_greedy", trains_on_questions=True),
    _llm("E", render_enriched, ENRICH, {"enrich": "enrich.txt"}, 1),
    _llm("E-K", render_enriched, ENRICH_WITHOUT_KEYS, {"enrich": "enrich.txt"}, 1),
    _llm("CR", render_context, CONTEXTUAL, {"contextual": "contextual.txt"}, 1),
    _llm("PF", render_enriched, PER_FIELD, PF_PROMPTS, len(PF_PROMPTS)),
    # add-on arms of amendments 2-4, built from the `of:` arm's chunks and indexed as E is
    _derived("M", "key_merge"),
    _derived("RM", "random_merge", requires=("seeds",)),
    _derived("SM", "similarity_merge", requires=("embedder",)),
    _derived("M-TP", "consolidated_merge", calls_per_document=1, needs_model=True, requires=("model",),
             prompts={"consolidate": "consolidate_keys.txt"}),
    _expansion("E+KX", "KX"),
    _expansion("E+AX", "AX"),
    _expansion("E+SX", "SX"),
    # planned (no builder yet)
    ArmKind("E+keys", HEADER_LED, render_enriched, needs_model=True),  # E with its key indexed too
    ArmKind("E+entities", HEADER_LED, render_enriched, needs_model=True),  # E with its entities indexed too
    # field ablations of E (robustness): E-no-<field>, E-only-<field>
    *(_ablation(name, keep) for name, keep in ABLATIONS.items()),
)}


def is_planned(arm_cfg: Any) -> bool:
    """An arm whose kind the plan names but no builder exists for yet: declared, never built or scored."""
    kind = arm_cfg.get("kind") if isinstance(arm_cfg, Mapping) else getattr(arm_cfg, "kind", None)
    return isinstance(kind, str) and kind in KINDS and not KINDS[kind].implemented


def lab_kinds() -> list[ArmKind]:
    """The chunking lab's kinds, in registry order (`harness lab` runs each with default settings)."""
    return [k for k in KINDS.values() if k.lab_chunker is not None]


def buildable_kinds() -> list[str]:
    return [name for name, k in KINDS.items() if k.implemented]


def llm_free_kinds() -> list[str]:
    """Kinds built from the documents alone, without any LLM call (the choices of `harness chunk`)."""
    return [name for name, k in KINDS.items()
            if k.implemented and k.llm_free and not k.derived and k.source_kind is None]


def get_kind(name: str) -> ArmKind:
    try:
        return KINDS[name]
    except (KeyError, TypeError):
        raise InputError(f"unknown arm kind {name!r}; known: {', '.join(KINDS)}") from None


def arm_kind(study: Study, arm: str) -> ArmKind:
    """The kind of a configured arm; an arm missing from the config or without `kind:` is an error."""
    cfg = study.arms.get(arm)
    if cfg is None:
        raise HarnessError(f"{study.config_path}: no arm `{arm}` (configured: {', '.join(study.arms)})")
    try:
        return get_kind(cfg.kind)  # the config schema admits only registered kinds
    except InputError as e:
        raise HarnessError(f"{study.config_path}: arm `{arm}`: {e}") from None


def buildable_arm_kind(study: Study, arm: str) -> ArmKind:
    """arm_kind, refusing a kind that is only planned (before any work starts)."""
    kind = arm_kind(study, arm)
    kind.require_implemented(arm)
    return kind


def render(kind: str, chunk: Chunk) -> Chunk:
    return get_kind(kind).render(chunk)


def arm_prompt_files(study: Study, arm: str) -> dict[str, str]:
    """role -> template file under prompts/ for a configured arm: its kind's templates, with the arm's own
    `prompts:` overrides (a paraphrased prompt, issue 15). A named file that does not exist is an error
    naming the arm and the key; the freeze hashes every file under prompts/."""
    cfg = study.arms[arm]
    kind = arm_kind(study, arm)
    overrides = getattr(cfg, "prompts", None) or {}
    for role, name in overrides.items():
        if role not in kind.prompts:  # the schema checks this too; a hand-built config may skip it
            raise HarnessError(f"{study.config_path}: arms.{arm}.prompts.{role}: kind {kind.name} has no prompt "
                               f"role {role!r} (its roles: {', '.join(kind.prompts) or 'none'})")
        if not (study.prompts_dir / name).is_file():
            raise HarnessError(f"{study.config_path}: arms.{arm}.prompts.{role}: {name!r} is not a file under "
                               f"{study.prompts_dir}")
    return {role: overrides.get(role, name) for role, name in kind.prompts.items()}


def source_arm(study: Study, arm: str) -> str:
    """The arm whose built chunks a derived arm starts from (its `of:`); checked to name a configured arm
    with a chunk set of its own."""
    cfg = study.arms.get(arm)
    of = getattr(cfg, "of", None)
    if of is None:
        raise HarnessError(f"{study.config_path}: arm `{arm}` has no `of:`, so it starts from no other arm")
    if of not in study.arms:
        raise HarnessError(f"{study.config_path}: arm `{arm}`: `of: {of}` names no configured arm "
                           f"(configured: {', '.join(study.arms)})")
    if arm_kind(study, of).retrieval_time:
        raise HarnessError(f"{study.config_path}: arm `{arm}`: `of: {of}` is expanded at retrieval time and has "
                           "no chunk set to start from")
    if getattr(study.arms[of], "repeats", None):
        raise HarnessError(f"{study.config_path}: arm `{arm}`: `of: {of}` has repeated generations; an add-on arm "
                           "starts from one generation run")
    return of
