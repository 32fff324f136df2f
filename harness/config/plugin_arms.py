"""The schemas of chunker arms from outside the harness (docs/plugins.md): `kind: python` names a function,
`kind: langchain`, `kind: llamaindex` and `kind: chonkie` a class of those libraries; each takes `params:`,
passed to the function or the class as keyword arguments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.config.arm_settings import DATASETS, contextual_headers_setting
from harness.config.fields import Anything, MapOf, Text, ValueCheck, Where, setting
from harness.errors import HarnessError
from harness.config.plugin_code import split_callable


class CallableName(ValueCheck):
    """`module:function` (harness.plugins.split_callable)."""

    expected = "`module:function`"

    def __call__(self, value: Any, where: Where) -> Any:
        if not isinstance(value, str):
            raise where.expected(self.expected, value)
        try:
            split_callable(value)
        except HarnessError as e:
            raise where.fail(str(e).replace(f"`{value}` ", "", 1)) from None
        return value


class ClassName(ValueCheck):
    """A class of the library, by its name (it is looked up when the arm is built)."""

    expected = "a class name"

    def __call__(self, value: Any, where: Where) -> Any:
        if not isinstance(value, str) or not value.isidentifier():
            raise where.expected(self.expected, value)
        return value


PARAMS = MapOf(Anything())


def params_setting():
    """`params:` keyword arguments of the function or class (none by default)."""
    return setting(check=PARAMS, factory=dict)


@dataclass(frozen=True)
class PluginArm:
    kind: str = setting(check=Text(non_empty=True))
    datasets: tuple[str, ...] | None = setting(None, DATASETS)
    contextual_headers: bool | None = contextual_headers_setting()


@dataclass(frozen=True)
class PythonArm(PluginArm):
    callable: str = setting(check=CallableName())  # fn(text, doc_id, **params) -> chunk texts or (start, end)
    params: dict[str, Any] = params_setting()


@dataclass(frozen=True)
class LangchainArm(PluginArm):
    splitter: str = setting(
        check=ClassName()
    )  # a langchain_text_splitters class, e.g. RecursiveCharacterTextSplitter
    params: dict[str, Any] = params_setting()


@dataclass(frozen=True)
class LlamaindexArm(PluginArm):
    parser: str = setting(check=ClassName())  # a llama_index.core.node_parser class, e.g. SentenceSplitter
    params: dict[str, Any] = params_setting()


@dataclass(frozen=True)
class ChonkieArm(PluginArm):
    chunker: str = setting(check=ClassName())  # a chonkie class, e.g. RecursiveChunker
    params: dict[str, Any] = params_setting()
