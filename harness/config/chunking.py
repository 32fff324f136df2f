"""`chunking:` (docs/design.md, Arms). The chunkers' keyword defaults are these constants, written only
here."""

from __future__ import annotations

from dataclasses import dataclass

from harness.config.fields import Int, OneOf, Where, setting

TAU_MIN = 100  # header-led: a chunk under this many characters joins its neighbour
TAU_MAX = 1500  # header-led: a body block that would take a chunk past this starts a new one
F512C_CHARS = 512
F256T_TOKENS = 256
F256T_STRIDE = 224  # overlap 32 tokens
P_PACK_CHARS = 1500
# the published chunker whose rules header-led chunking reproduces byte for byte (docs/chunking.md);
# recorded so the frozen config says which definition of S a study used
HEADER_LED_REFERENCE = "mdkeychunker==0.4.2 MarkdownChunker"


@dataclass(frozen=True)
class Chunking:
    tau_min: int = setting(TAU_MIN, Int(0))
    tau_max: int = setting(TAU_MAX, Int(1))
    f512c_chars: int = setting(F512C_CHARS, Int(1))
    f256t_tokens: int = setting(F256T_TOKENS, Int(1))
    f256t_stride: int = setting(F256T_STRIDE, Int(1))
    p_pack_chars: int = setting(P_PACK_CHARS, Int(1))
    header_led_reference: str = setting(HEADER_LED_REFERENCE, OneOf((HEADER_LED_REFERENCE,)))

    def completed(self, where: Where) -> "Chunking":
        if self.tau_min > self.tau_max:
            raise where.child("tau_min").expected(f"an integer <= tau_max ({self.tau_max})", self.tau_min)
        if self.f256t_stride > self.f256t_tokens:
            raise where.child("f256t_stride").expected(
                f"an integer <= f256t_tokens ({self.f256t_tokens}), or windows would skip text",
                self.f256t_stride,
            )
        return self
