"""Orchestration of a study's grid: which chunk sets and cells exist (grid), scoring them (score), the
per-question files (results, parts) and the read-only overview (status). Metric functions stay in
harness.metrics."""
