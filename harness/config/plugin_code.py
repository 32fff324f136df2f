"""What an arm kind or retriever type running code from outside the harness declares (docs/plugins.md): which
of its settings name that code or the files it reads, or which library it wraps. The freeze records an entry
by
this declaration (harness.plugins.code_identity, read by harness.provenance.inputs)."""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import HarnessError

PLUGINS_FOLDER = (
    "plugins"  # a study's own plugin modules, beside configs/; every file in it is a frozen input
)
EXTRA = "plugins"  # the optional extra that installs the adapters' libraries: pip install -e '.[plugins]'


def split_callable(text: str) -> tuple[str, str]:
    """`module.sub:function` as (module, function); refused naming the text when it has another shape."""
    module, sep, name = text.partition(":")
    parts = module.split(".") if module else []
    if not sep or not name.isidentifier() or not parts or not all(p.isidentifier() for p in parts):
        raise HarnessError(
            f"`{text}` is not `module:function` (a dotted module name, a colon, a function name)"
        )
    return module, name


@dataclass(frozen=True)
class PluginCode:
    """Declared on an arm kind or a retriever type whose entries run code from outside the harness."""

    callable_key: str | None = None  # the setting naming `module:function` (kind python, type python)
    package: str | None = None  # the distribution an adapter wraps (kind langchain: langchain-text-splitters)
    # the setting mapping names to files another tool wrote (type run-file: arm -> run file), each recorded by
    # its SHA-256, or null while it is not written yet (it may be written after build-arms, then frozen again)
    files_key: str | None = None
