"""The arm kinds (docs/design.md, Arms): what each kind is, declared once; the one place that names arm kinds.

A config arm is `{kind: <name here>, ...}`. A kind declares which chunks it starts from, how many LLM calls
it makes with which prompts, which inputs it needs and which config keys it takes. How a kind is built and
rendered is attached per name in harness.arms.registry. Kinds the plan names but no builder exists for yet
are declared as planned: they resolve (the config may name them, freeze records them), and building one
fails naming the arm.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from harness.config.lab import ProvisionsArm, QesDpArm, QesGreedyArm, WindowArm
from harness.config.plugin_arms import ChonkieArm, LangchainArm, LlamaindexArm, PythonArm
from harness.errors import HarnessError, InputError
from harness.config.plugin_code import PluginCode

HEADER_LED = "header-led"
# how an LLM kind annotates header-led chunks (harness.arms.llm_arms dispatches on it)
ENRICH, ENRICH_WITHOUT_KEYS, CONTEXTUAL, PER_FIELD = (
    "enrich",
    "enrich without keys",
    "contextual",
    "per field",
)

ENRICHED_FIELDS = ("title", "summary", "keywords", "questions")  # what E's rendering indexes, in order
PF_PROMPTS = {name: f"pf_{name}.txt" for name in ENRICHED_FIELDS}
# field ablations of E (robustness): name -> the generated fields its rendering keeps
ABLATIONS: dict[str, tuple[str, ...]] = {
    **{f"E-no-{f}": tuple(x for x in ENRICHED_FIELDS if x != f) for f in ENRICHED_FIELDS},
    **{f"E-only-{f}": (f,) for f in ENRICHED_FIELDS},
}
# E with a generated field it does not index added after its own (exploratory indexing, amendment 0003):
# name -> the fields its rendering indexes, in order
INDEXED_EXTRAS: dict[str, tuple[str, ...]] = {
    "E+keys": (*ENRICHED_FIELDS, "key"),
    "E+entities": (*ENRICHED_FIELDS, "entities"),
}
# every re-rendering of E's built chunks (no LLM call): name -> the fields it indexes
RERENDERINGS: dict[str, tuple[str, ...]] = {**INDEXED_EXTRAS, **ABLATIONS}


@dataclass(frozen=True)
class ArmKindSpec:
    name: str
    boundaries: (
        str  # chunker in harness.chunking.CHUNKERS whose chunks the kind starts from (lab kinds: itself)
    )
    calls_per_chunk: int = 0
    calls_per_document: int = 0
    prompts: Mapping[str, str] = field(default_factory=dict)  # role -> template file under prompts/
    needs_model: bool = False
    needs_s_chunks: bool = False  # FL measures its window on the S chunks
    annotation: str | None = None  # LLM kinds: ENRICH, ENRICH_WITHOUT_KEYS, CONTEXTUAL or PER_FIELD
    settings: type | None = None  # its own config schema (lab kinds); None: chosen by harness.config.arms
    trains_on_questions: bool = False  # supervised: built from the training split's evidence (QES)
    derived: bool = False  # starts from the built chunks of another arm of the dataset, the one `of:` names
    # derived kinds: the kind the `of:` arm must have, which lets `of:` be left out when exactly one arm of
    # that kind applies to the dataset (field ablations of E); None: `of:` is required and may name any arm
    # with a chunk set of its own
    of_kind: str | None = None
    expansion: str | None = None  # KX, AX or SX: expanded at retrieval time, no chunk set of its own
    requires: tuple[str, ...] = ()  # derived kinds: the config keys an arm of this kind must set
    planned: bool = False  # named by the plan, no builder yet
    # chunks cut by code from outside the harness (docs/plugins.md): what the freeze records of it; such a
    # kind has its own schema (`settings`) but is not a lab kind, and `harness chunk` cannot configure it
    plugin: PluginCode | None = None
    # "short name: what it is", for the glossary; the report's sentences spell an arm out by the short name
    # (harness.report.glossary). None: the glossary says what the fields above say
    description: str | None = None

    @property
    def implemented(self) -> bool:
        return not self.planned

    @property
    def retrieval_time(self) -> bool:
        return self.expansion is not None

    @property
    def llm_free(self) -> bool:
        return not self.needs_model

    @property
    def of_required(self) -> bool:
        """An add-on arm of the amendments: built from whichever arm its config names under `of:`."""
        return self.derived and self.of_kind is None

    def require_implemented(self, arm: str) -> None:
        if not self.implemented:
            raise HarnessError(
                f"arm `{arm}` has kind {self.name!r}, which the plan names but this harness does not "
                "implement "
                f"yet (buildable kinds: {', '.join(buildable_kinds())})"
            )


def _lab(name: str, settings: type, **kw) -> ArmKindSpec:
    return ArmKindSpec(name, name, settings=settings, **kw)


def _plugin(name: str, settings: type, code: PluginCode, description: str | None = None) -> ArmKindSpec:
    return ArmKindSpec(name, name, settings=settings, plugin=code, description=description)


def _llm(name: str, annotation: str, prompts: Mapping[str, str], calls_per_chunk: int,
         description: str | None = None) -> ArmKindSpec:
    return ArmKindSpec(name, HEADER_LED, calls_per_chunk=calls_per_chunk, prompts=prompts, needs_model=True,
                       annotation=annotation, description=description)


def _derived(name: str, **kw) -> ArmKindSpec:
    return ArmKindSpec(name, HEADER_LED, derived=True, **kw)


ARM_KINDS: dict[str, ArmKindSpec] = {
    k.name: k
    for k in (
        ArmKindSpec(
            "S",
            HEADER_LED,
            description="header-led sections: chunks cut at the document's headings "
            "(docs/chunking.md), each indexed as its own text",
        ),
        ArmKindSpec(
            "S+T",
            HEADER_LED,
            description="sections with their path: the S chunks, each indexed with "
            "its section path (the headings above it) before its text",
        ),
        ArmKindSpec("F512c", "F512c", description="512-character windows: fixed windows, no overlap"),
        ArmKindSpec("F256t", "F256t", description="256-token windows: cl100k tokens, stride 224"),
        ArmKindSpec(
            "P",
            "P",
            description="packed paragraphs: blank-line paragraphs packed into chunks of at "
            "most 1,500 characters",
        ),
        ArmKindSpec(
            "FL",
            "FL",
            needs_s_chunks=True,
            description="S-length windows: token windows as long as the median S chunk",
        ),
        # the chunking lab (docs/chunking-lab.md): `L` may be a list (a chunk-size sweep,
        # harness.config.lab.expand_sweeps)
        _lab("fixed", WindowArm, description="character windows: chunking lab, windows of L characters"),
        _lab(
            "sentence",
            WindowArm,
            description="sentence windows: chunking lab, whole sentences packed up to L characters",
        ),
        _lab(
            "provisions",
            ProvisionsArm,
            description="provisions: chunking lab, numbered provisions, optionally "
            "with the definitions they cite",
        ),
        _lab(
            "qes-dp",
            QesDpArm,
            trains_on_questions=True,
            description="learnt boundaries (DP): chunking lab, "
            "boundaries fitted to the training questions' evidence by dynamic programming",
        ),
        _lab(
            "qes-greedy",
            QesGreedyArm,
            trains_on_questions=True,
            description="learnt boundaries (greedy): "
            "chunking lab, boundaries fitted to the training questions' evidence greedily",
        ),
        # chunkers from outside the harness (docs/plugins.md)
        _plugin(
            "python",
            PythonArm,
            PluginCode(callable_key="callable"),
            description="your own chunker: the Python function the arm's `callable:` names (docs/plugins.md)",
        ),
        _plugin(
            "langchain",
            LangchainArm,
            PluginCode(package="langchain-text-splitters"),
            description="a LangChain text splitter: chunks cut by the splitter the arm configures",
        ),
        _plugin(
            "llamaindex",
            LlamaindexArm,
            PluginCode(package="llama-index-core"),
            description="a LlamaIndex node parser: chunks cut by the parser the arm configures",
        ),
        _plugin(
            "chonkie",
            ChonkieArm,
            PluginCode(package="chonkie"),
            description="a Chonkie chunker: chunks cut by the chunker the arm configures",
        ),
        _llm(
            "E",
            ENRICH,
            {"enrich": "enrich.txt"},
            1,
            description="LLM-enriched sections: the S chunks, each "
            "indexed with an LLM-written title, summary, keywords and questions before its text (one call "
            "per "
            "chunk)",
        ),
        _llm(
            "E-K",
            ENRICH_WITHOUT_KEYS,
            {"enrich": "enrich.txt"},
            1,
            description="enriched without the key "
            "list: as E, without the document's rolling key list in the prompt",
        ),
        _llm(
            "CR",
            CONTEXTUAL,
            {"contextual": "contextual.txt"},
            1,
            description="contextual retrieval: the S "
            "chunks, each indexed with an LLM-written context situating it in its whole document (one call "
            "per "
            "chunk)",
        ),
        _llm(
            "PF",
            PER_FIELD,
            PF_PROMPTS,
            len(PF_PROMPTS),
            description="per-field enrichment: as E, each field "
            "asked for in a call of its own (four calls per chunk)",
        ),
        # add-on arms of amendments 2-4, built from the `of:` arm's chunks and indexed as E is
        _derived(
            "M",
            description="key-merged E chunks: adjacent E chunks sharing a subtopic key merged (packed "
            "under 3,000 characters)",
        ),
        _derived(
            "RM",
            requires=("seeds",),
            description="randomly merged E chunks: as many merges as M, of "
            "random adjacent pairs (M's control; one chunk set per seed)",
        ),
        _derived(
            "SM",
            requires=("embedder",),
            description="similarity-merged E chunks: as many merges as M, of "
            "the most similar adjacent pairs by embedding (M's control)",
        ),
        _derived(
            "M-TP",
            calls_per_document=1,
            needs_model=True,
            requires=("model",),
            prompts={"consolidate": "consolidate_keys.txt"},
            description="M with consolidated keys: M after one LLM call per document consolidates its keys",
        ),
        _derived(
            "E+KX",
            expansion="KX",
            description="E with key expansion: after each retrieved chunk, the "
            "chunks sharing its key are inserted at retrieval time",
        ),
        _derived(
            "E+AX",
            expansion="AX",
            description="E with adjacent expansion: after each retrieved chunk, its "
            "neighbours are inserted at retrieval time",
        ),
        _derived(
            "E+SX",
            expansion="SX",
            description="E with section expansion: after each retrieved chunk, the "
            "chunks of its section are inserted at retrieval time",
        ),
        # E's built chunks re-rendered with some of its fields, or with one it does not index: no LLM call
        *(
            _derived(
                name,
                of_kind="E",
                description=f"E indexed with {', '.join(fields)}: E's built chunks re-rendered, no LLM call",
            )
            for name, fields in RERENDERINGS.items()
        ),
    )
}


# What `harness init` writes into a new study (the flagship's H1-H3 on the user's data): the LLM-free arms,
# the
# paid arms `--llm` adds, and the (a, b) contrasts of the structure family and of the primary family.
STARTER_ARMS = ("S", "S+T", "F512c", "F256t")
STARTER_PAID_ARMS = ("E", "CR")
STARTER_STRUCTURE = (("S", "F512c"), ("S", "F256t"))  # H3: header-led sections against fixed windows
STARTER_PRIMARY = (
    ("E", "S+T"),
    ("E", "CR"),
)  # H1, H2: one LLM call per chunk against free structure and context


def is_planned(arm_cfg: Any) -> bool:
    """An arm whose kind the plan names but no builder exists for yet: declared, never built or scored."""
    kind = arm_cfg.get("kind") if isinstance(arm_cfg, Mapping) else getattr(arm_cfg, "kind", None)
    return isinstance(kind, str) and kind in ARM_KINDS and not ARM_KINDS[kind].implemented


def lab_kinds() -> list[ArmKindSpec]:
    """The chunking lab's kinds, in declaration order (`harness lab` runs each with default settings)."""
    return [k for k in ARM_KINDS.values() if k.settings is not None and k.plugin is None]


def buildable_kinds() -> list[str]:
    return [name for name, k in ARM_KINDS.items() if k.implemented]


def llm_free_kinds() -> list[str]:
    """Kinds built from the documents alone, without any LLM call (the choices of `harness chunk`)."""
    return [name for name, k in ARM_KINDS.items()
            if k.implemented and k.llm_free and not k.derived and k.plugin is None]


def get_kind(name: str) -> ArmKindSpec:
    try:
        return ARM_KINDS[name]
    except (KeyError, TypeError):
        raise InputError(f"unknown arm kind {name!r}; known: {', '.join(ARM_KINDS)}") from None
