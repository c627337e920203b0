"""Think first, then answer under the constraint: reasoning models (Qwen3, DeepSeek-R1) write free
text until an end-of-reasoning marker (`</think>`), and only what follows it must match the schema
or pattern.

ThinkingMatcher wraps a backend's matcher and has its interface, so Guide, speculation and rollback
work across the boundary unchanged. While thinking, the mask allows every token but EOS and the
tokens that would finish the marker before their own end (the answer then starts on a token
boundary); the marker is found in the bytes of the tokens, so it may be one token or split over
several. Each thinking token steps a KMP automaton over the marker; its state after every token is
kept, so rolling back past the boundary returns to thinking. Once `budget` thinking tokens are
spent, the marker is forced (jump-forward tokens: written after a partial marker such as '</thi', it
still ends the thinking, as '</thi</think>'), and the grammar starts.

Thinking: the per-tokenizer tables, built once ([states, W] masks: a few marker lengths x vocab)."""
import dataclasses
from dataclasses import dataclass

import torch

from playground.config import NO_THINK_END, THINK_END
from playground.errors import PlaygroundError

MARKER = THINK_END


@dataclass(frozen=True)
class Thinking:
    marker: bytes
    delta: tuple[tuple[int, ...], ...]  # [L][256] KMP automaton: state = marker bytes matched so far
    token_bytes: tuple[bytes, ...]  # [tokens] each token id's bytes
    masks: torch.Tensor  # [L, W] int32: tokens allowed while thinking, per automaton state
    finish: tuple[int, ...]  # the marker's token ids, forced once the budget is spent (from any state)

    def step(self, state: int, token: int) -> int | None:
        """The automaton's state after `token`'s bytes; len(marker) when it ends exactly on the
        marker; None when it would finish the marker inside the token (never allowed)."""
        done = len(self.marker)
        for i, byte in enumerate(self.token_bytes[token] if token < len(self.token_bytes) else b""):
            state = self.delta[state][byte]
            if state == done:
                return done if i == len(self.token_bytes[token]) - 1 else None
        return state

    def answer_start(self, token_ids: list[int]) -> int | None:
        """Index of the first answer token in committed `token_ids` (None: still thinking)."""
        state = 0
        for i, token in enumerate(token_ids):
            state = self.step(state, token)
            if state is None:
                return None
            if state == len(self.marker):
                return i + 1
        return None


def thinking_tables(token_bytes: list[bytes], encode, vocab: int, eos_ids: frozenset[int]) -> Thinking:
    """token_bytes: each id's bytes; encode(text) -> ids without special tokens added."""
    marker = MARKER.encode()
    tables = Thinking(marker, _automaton(marker), tuple(token_bytes), torch.empty(0), tuple(encode(MARKER)))
    finish = tables.finish
    for state in range(len(marker)):  # written after any partial marker, it ends exactly on the marker
        for token in finish:
            state = tables.step(state, token) if state is not None else None
        if state != len(marker):
            raise PlaygroundError(f"this tokenizer cannot write {MARKER} as tokens that end on it; thinking first is off")
    return dataclasses.replace(tables, masks=_masks(tables, vocab, eos_ids))


def _automaton(marker: bytes) -> tuple[tuple[int, ...], ...]:
    """delta[s][b]: the longest prefix of `marker` that ends the text (s matched bytes, then b)."""
    delta = []
    for s in range(len(marker)):
        row = []
        for b in range(256):
            text = marker[:s] + bytes([b])
            row.append(next(n for n in range(len(text), -1, -1) if marker[:n] == text[len(text) - n:]))
        delta.append(tuple(row))
    return tuple(delta)


def _masks(t: Thinking, vocab: int, eos_ids: frozenset[int]) -> torch.Tensor:
    """[L, W] int32 bitmasks: every real token but EOS, less those that would finish the marker
    before their last byte from that state (only tokens holding the marker's last byte early can)."""
    allowed = torch.zeros(len(t.marker), (vocab + 31) // 32 * 32, dtype=torch.bool)
    allowed[:, :min(vocab, len(t.token_bytes))] = True
    allowed[:, [e for e in eos_ids if e < vocab]] = False
    last = t.marker[-1]
    for token, data in enumerate(t.token_bytes[:vocab]):
        if last in data[:-1]:
            for state in range(len(t.marker)):
                if t.step(state, token) is None:
                    allowed[state, token] = False
    return _pack(allowed)


def _pack(allowed: torch.Tensor) -> torch.Tensor:
    """[L, 32W] bool -> [L, W] int32: bit j of word i is token 32i + j."""
    bits = allowed.view(allowed.shape[0], -1, 32).to(torch.int64) << torch.arange(32)
    return (bits.sum(-1) - ((bits.sum(-1) >> 31) << 32)).to(torch.int32)


class ThinkingMatcher:
    """A backend matcher that starts after the marker (see the module docstring)."""

    def __init__(self, inner, tables: Thinking, budget: int):
        self.inner, self.t, self.budget = inner, tables, budget
        self.states = [0]  # the automaton's state after each thinking token (states[0]: before any)
        self.answered = 0  # tokens the inner matcher has consumed

    def thinking(self) -> bool:
        return self.states[-1] != len(self.t.marker)

    def fill_bitmask(self, row: torch.Tensor) -> None:
        if self.thinking():
            row.copy_(self.t.masks[self.states[-1], :row.numel()])
        else:
            self.inner.fill_bitmask(row)

    def consume(self, token: int) -> bool:
        if not self.thinking():
            ok = self.inner.consume(token)
            self.answered += ok
            return ok
        state = self.t.step(self.states[-1], token)
        if state is None:
            return False
        self.states.append(state)
        return True

    def rollback(self, n: int) -> None:
        """Undo the last n tokens: answer tokens in the inner matcher, then thinking tokens."""
        answer = min(n, self.answered)
        self.inner.rollback(answer)
        self.answered -= answer
        if n - answer:
            if n - answer >= len(self.states):
                raise RuntimeError(f"rollback of {n} tokens past the start")
            del self.states[len(self.states) - (n - answer):]

    def forced_tokens(self) -> list[int]:
        """The marker's rest once the budget is spent, the grammar's own forced tokens after it."""
        if not self.thinking():
            return self.inner.forced_tokens()
        written = len(self.states) - 1 - self.budget  # of the marker's tokens (past the budget, only they are)
        return list(self.t.finish[written:]) if written >= 0 else []  # (from 0 again, a marker of several
        # tokens was forced its first token forever: '<<<<')

    def accepting(self) -> bool:
        return not self.thinking() and self.inner.accepting()

    def error(self) -> str | None:
        return None if self.thinking() else self.inner.error()


def check_marker(tokenizer) -> None:
    """Thinking first needs a reasoning model: a tokenizer that knows the marker as a token."""
    ids = tokenizer.convert_tokens_to_ids([MARKER])
    if not ids or ids[0] is None or ids[0] == getattr(tokenizer, "unk_token_id", None):
        raise PlaygroundError(NO_THINK_END)
