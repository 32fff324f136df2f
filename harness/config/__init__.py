"""The typed study config (configs/study.yaml): one schema, every default written once.

Sections are frozen dataclasses (harness.config.fields explains the machinery); `load_study_config`
checks a parsed YAML mapping against them and `to_plain` turns the result back into plain data, which
is what `harness config` prints and what `harness freeze` records.
"""

from harness.config.fields import to_plain
from harness.config.study_config import StudyConfig, load_study_config

__all__ = ["StudyConfig", "load_study_config", "to_plain"]
