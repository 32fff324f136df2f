"""The study report: inputs, drops, chunk-set diagnostics, LLM cost and, once allowed, the verdicts."""
