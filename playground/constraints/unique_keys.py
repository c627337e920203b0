"""No key twice in one JSON object, while writing. A schema's grammar (llguidance's or xgrammar's)
lets an object whose names are free (additionalProperties, patternProperties) repeat one:
`{"tags": {...}, "tags": {...}}`, which the check after the run refuses (what a repeated key means
is up to each reader). SmolLM2 wrote one over a real schema (JSONSchemaBench's Github_easy o82294):
asked for an instance, it echoed the schema and wrote "description" twice.

UniqueKeys wraps the grammar's matcher and follows the output byte by byte (objects, arrays,
strings; the grammar keeps it JSON): inside a name, or where one starts (after { or ,), a token
that would close a name its object already holds is masked (` "a"` whole, or `":` after `"a`).
Elsewhere, a token holding a `,` or `{` with two quotes after it is looked at too: it can write a
whole name itself (`1, "a"`, `"}, "a"`, `{"a": 1, "a"`). Where masking would leave no token at all (a
finite set of names, all written), the grammar's mask stands: never a dead end; that repeat is left
to the check after the run."""
import json
import re
from dataclasses import dataclass

import torch

from playground.constraints.guide import _bit

QUOTE, BACKSLASH = ord('"'), ord("\\")
OPENS, CLOSES = {ord("{"): True, ord("["): False}, {ord("}"), ord("]")}


@dataclass(frozen=True, slots=True)
class Lexed:
    """Where the output stands, after a token (kept per token: a rollback pops them)."""
    frames: tuple = ()  # one per open container: a frozenset of the names written (object) or None (array)
    wants_key: bool = False  # the innermost object's next string is a name (after { or ,)
    in_string: bool = False
    key: bytes | None = None  # the name being written, as written (inside a name only)
    escaped: bool = False  # the last byte in a string began an escape
    repeated: bool = False  # the bytes that led here closed a name its object already held


def lexed(state: Lexed, data: bytes) -> Lexed:
    """The state after the bytes `data` (a valid JSON continuation: the grammar allowed it)."""
    frames, wants_key, in_string, key, escaped = list(state.frames), state.wants_key, state.in_string, state.key, state.escaped
    start, repeated = 0, False  # where the name being written starts in `data`
    for i, byte in enumerate(data):
        if in_string:
            if escaped:
                escaped = False
            elif byte == BACKSLASH:
                escaped = True
            elif byte == QUOTE:
                if key is not None:
                    written = name(key + data[start:i])
                    repeated = repeated or written in frames[-1]
                    frames[-1] = frames[-1] | {written}
                    key, wants_key = None, False
                in_string = False
        elif byte == QUOTE:
            in_string, start = True, i + 1
            key = b"" if wants_key and frames and frames[-1] is not None else None
        elif byte in OPENS:
            frames.append(frozenset() if OPENS[byte] else None)
            wants_key = OPENS[byte]
        elif byte in CLOSES:
            if frames:
                frames.pop()
            wants_key = False
        elif byte == ord(","):
            wants_key = bool(frames) and frames[-1] is not None
    if key is not None:
        key += data[start:]
    return Lexed(tuple(frames), wants_key, in_string, key, escaped, repeated)


def name(raw: bytes) -> str:
    """A name as written (escapes and all) -> the name a reader gets."""
    try:
        return json.loads(b'"' + raw + b'"')
    except ValueError:
        return raw.decode("utf-8", "replace")


class UniqueKeys:
    """A matcher (llguidance's or xgrammar's) with the same methods, masking repeated names."""

    def __init__(self, inner, token_bytes: tuple[bytes, ...], quoted: torch.Tensor, whole_names: torch.Tensor):
        self.inner = inner
        self.token_bytes = token_bytes  # [tokens] each id's bytes
        self.quoted = quoted  # [Q] int64: the ids whose bytes hold a quote (only they can close a name)
        self.whole_names = whole_names  # [N] those with a , or { and two quotes after it (only they can
        # open and close a name from outside one; none of SmolLM2's 49k)
        self.states = [Lexed()]  # after each consumed token, the first before any

    def fill_bitmask(self, row: torch.Tensor) -> None:
        self.inner.fill_bitmask(row)
        state = self.states[-1]
        ids = self._closers(state)
        if not len(ids):
            return
        ids = ids[ids < 32 * len(row)]
        allowed = ids[((row[ids >> 5].long() >> (ids & 31)) & 1).bool()]  # [A] quote tokens the grammar allows
        repeats = [t for t in allowed.tolist() if lexed(state, self.token_bytes[t]).repeated]
        if not repeats:
            return
        before = row.clone()
        for t in repeats:
            row[t >> 5] &= ~_bit(t & 31)
        if not row.any():  # only repeats are left: the grammar's mask stands (no dead end), the check says so
            row.copy_(before)

    def _closers(self, state: Lexed) -> torch.Tensor:
        """The ids that could close a name its object already holds (or one the token itself writes), from here."""
        naming = state.key is not None or (state.wants_key and not state.in_string)  # in a name, or where one starts
        return self.quoted if naming and state.frames[-1] else self.whole_names

    def consume(self, token: int) -> bool:
        ok = self.inner.consume(token)
        if ok:
            data = self.token_bytes[token] if token < len(self.token_bytes) else b""
            self.states.append(lexed(self.states[-1], data))
        return ok

    def rollback(self, n: int) -> None:
        self.inner.rollback(n)
        if n:
            del self.states[len(self.states) - n:]

    def forced_tokens(self) -> list[int]:
        return self.inner.forced_tokens()

    def accepting(self) -> bool:
        return self.inner.accepting()

    def error(self) -> str | None:
        return self.inner.error()


def quoted_ids(token_bytes: tuple[bytes, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    """-> (the ids whose bytes hold a quote, those holding a , or { with two quotes after it):
    UniqueKeys' last two arguments."""
    whole = re.compile(rb'[,{][^"]*"[^"]*"')  # a name opened after , or { and closed, in one token
    return (torch.tensor([i for i, data in enumerate(token_bytes) if b'"' in data], dtype=torch.long),
            torch.tensor([i for i, data in enumerate(token_bytes) if whole.search(data)], dtype=torch.long))
