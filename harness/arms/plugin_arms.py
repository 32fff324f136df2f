"""Builder of the chunker arms from outside the harness (docs/plugins.md): `kind: python` calls a function of
the study's plugins/ or of an installed package; `kind: langchain`, `llamaindex` and `chonkie` call a library
class through its adapter (harness.chunking.library_splitters). Either way a document's pieces are located in
its text (harness.chunking.outside) and the counts of how they were placed go into the chunk set's
manifest."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any, Callable, Mapping

from harness.arms.builder import ArmBuilder, ArmChunks, BuildInputs
from harness.chunking.library_splitters import Cutter
from harness.chunking.outside import HOW, UNLOCATED, outside_chunks
from harness.config.arm_kinds import ArmKindSpec
from harness.config.fields import Where, build
from harness.errors import HarnessError
from harness.plugins import load_callable

# (the arm's typed settings, the study root, the arm named for messages) -> the arm's cutter
MakeCutter = Callable[[Any, Any, str], Cutter]


def python_function(cfg: Any, root: Any, what: str) -> Cutter:
    function = load_callable(cfg.callable, root, what=what)
    params = dict(cfg.params)
    return lambda text, doc_id: function(text, doc_id, **params)


def library_class(adapter: Callable[[str, Mapping[str, Any], str], Cutter], key: str) -> MakeCutter:
    """A library adapter, given the class the arm names under `key`."""
    return lambda cfg, root, what: adapter(getattr(cfg, key), cfg.params, what)


def build_outside(
    make_cutter: MakeCutter, kind: ArmKindSpec, builder: ArmBuilder, inputs: BuildInputs
) -> ArmChunks:
    arm = inputs.arm or kind.name
    what = f"arm `{arm}` (kind {kind.name})"
    cfg = inputs.arm_config
    if not isinstance(cfg, kind.settings):
        cfg = build(kind.settings, {"kind": kind.name, **cfg}, Where(None, ("arms", arm)))
    cut = make_cutter(cfg, inputs.study.root if inputs.study is not None else None, what)
    chunks, counts, unlocated = [], Counter(), {}
    for document in inputs.documents:
        try:
            pieces = cut(document.text, document.doc_id)
        except HarnessError:
            raise
        except Exception as e:  # the outside code failed: name the arm and the document
            raise HarnessError(f"{what}: the chunker failed on document {document.doc_id}: "
                               f"{type(e).__name__}: {e}") from None
        if isinstance(pieces, (str, bytes)) or not isinstance(pieces, Iterable):
            raise HarnessError(f"{what}: document {document.doc_id}: the chunker returned a "
                               f"{type(pieces).__name__}, not a list of chunk texts or (start, end) spans")
        found, how = outside_chunks(document, list(pieces), what=what)
        chunks += found
        counts.update(how)
        if how[UNLOCATED]:
            unlocated[document.doc_id] = how[UNLOCATED]
    extra = {"chunker": kind.name, "pieces": {h: counts[h] for h in HOW},
             "unlocated_by_document": dict(sorted(unlocated.items()))}
    return ArmChunks([builder.render(c) for c in chunks], extra)


def unlocated_warning(label: str, manifest: Mapping[str, Any]) -> str | None:
    """A warning line when an outside chunker gave chunks that are not in the text (left out of the set)."""
    pieces = manifest.get("pieces")
    if not isinstance(pieces, Mapping) or not pieces.get(UNLOCATED):
        return None
    documents = manifest.get("unlocated_by_document") or {}
    return (
        f"warning: {label}: {pieces[UNLOCATED]} chunk(s) from {len(documents)} document(s) are not in the "
        f"source text and were left out (first: {next(iter(documents), '?')}; see the manifest's `pieces`)"
    )
