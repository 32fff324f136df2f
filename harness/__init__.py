"""Pre-registered experiment harness for RAG indexing studies."""

__version__ = "0.1.0"
