"""No UTF-16 surrogate written as UTF-8. xgrammar 0.2.8 reads a character class by code points and
matches their UTF-8 bytes, U+D800-U+DFFF among them: a JSON string (`[^"\\]`), a regex's `.` or
`[^a]` or `[Ā-￿]` let it write ED A0-BF xx, which no UTF-8 reader takes (the text then reads
U+FFFD, and a bounded string may come out too long). llguidance refuses those bytes itself.

NoSurrogates wraps xgrammar's matcher and narrows its mask: a token holding ED A0-BF is never
allowed, and after a token ending in ED (a lead byte: never a continuation) neither is one starting
with A0-BF. ED 80-9F (U+D000-U+D7FF) stays open, so the mask narrows to what a reader takes and
never to a dead end the grammar left open."""
import re
from dataclasses import dataclass

import numpy as np
import torch

from playground.constraints.matcher import Wrapper, drop_last

SURROGATE = re.compile(rb"\xed[\xa0-\xbf]")  # the first two bytes of U+D800-U+DFFF in UTF-8
LEAD = 0xED


@dataclass(frozen=True, slots=True)
class SurrogateTables:
    keep: torch.Tensor  # [W] int32 mask words: every token but those holding ED A0-BF
    keep_after_lead: torch.Tensor  # [W] int32: those, less the tokens starting with A0-BF
    ends_in_lead: frozenset[int]  # the ids whose bytes end with ED


def surrogate_tables(token_bytes: tuple[bytes, ...], vocab: int) -> SurrogateTables:
    """From each id's bytes (ids past them are kept: a model's rows beyond its tokenizer)."""
    never = np.zeros(32 * ((vocab + 31) // 32), dtype=bool)  # [W*32], bit order of the mask words
    after_lead = never.copy()
    for i, data in enumerate(token_bytes[:vocab]):
        never[i] = SURROGATE.search(data) is not None
        after_lead[i] = never[i] or (bool(data) and 0xA0 <= data[0] <= 0xBF)
    ends = frozenset(i for i, data in enumerate(token_bytes[:vocab]) if data.endswith(bytes([LEAD])))
    return SurrogateTables(_words(~never), _words(~after_lead), ends)


def _words(bits: np.ndarray) -> torch.Tensor:
    """[W*32] bools -> [W] int32 words, token 32*w + j at bit j of word w (the masks' layout)."""
    return torch.from_numpy(np.packbits(bits, bitorder="little").view("<i4").copy())


class NoSurrogates(Wrapper):
    """xgrammar's matcher with the same methods, never writing a surrogate (a jump-forward text is a str:
    whole characters, so its forced tokens are the inner matcher's)."""

    def __init__(self, inner, tables: SurrogateTables):
        super().__init__(inner)
        self.tables = tables
        self.after_lead = [False]  # after each consumed token: its bytes end with ED; the first before any

    def fill_bitmask(self, row: torch.Tensor) -> None:
        self.inner.fill_bitmask(row)
        keep = self.tables.keep_after_lead if self.after_lead[-1] else self.tables.keep
        row &= keep[:len(row)]

    def consume(self, token: int) -> bool:
        ok = self.inner.consume(token)
        if ok:
            self.after_lead.append(token in self.tables.ends_in_lead)
        return ok

    def fork(self) -> "NoSurrogates":
        copy = NoSurrogates(self.inner.fork(), self.tables)
        copy.after_lead = [self.after_lead[-1]]
        return copy

    def rollback(self, n: int) -> None:
        self.inner.rollback(n)
        drop_last(self.after_lead, n)
