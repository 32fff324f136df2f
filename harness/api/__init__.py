"""The Python API for notebooks and scripts (docs/api.md): `harness.Study` and `harness.compare`.

The top layer of the package: it reads what the stages wrote through their own readers and runs a stage
through that command's own parser, so a call and a command line take the same options and do the same thing.
"""

from harness.api.frame_compare import FrameComparison, compare
from harness.api.study_handle import StudyHandle, StudyStatus
from harness.api.verdict_frame import VerdictFrame

# exposed as harness.Study; the class keeps its own name, since harness.study.Study is the study folder the
# stages are handed (one name, one meaning: docs/working-on-the-harness.md)
Study = StudyHandle

__all__ = ["FrameComparison", "Study", "StudyHandle", "StudyStatus", "VerdictFrame", "compare"]
