"""Pre-registered experiment harness for RAG indexing studies.

`harness.Study` and `harness.compare` are the Python API (harness.api, docs/api.md), loaded on first use so
that `import harness` and every command stay quick.
"""

__version__ = "0.1.0"
PUBLIC = ("Study", "compare")


def __getattr__(name: str):
    if name in PUBLIC:
        # the one import from the base layer up to the API (tests/test_layering.py, PUBLIC_NAMES)
        import harness.api as api

        return getattr(api, name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *PUBLIC})
