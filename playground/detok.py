"""Text of each token as it is committed. The engine speaks token ids; the caller fills in their text
here, from the events as they come. Byte-level BPE can split one UTF-8 character over several
tokens, so a token's text is the growth of the decoded text, held back while a character is
incomplete (the approach of vLLM's incremental detokenizer)."""
from collections.abc import Iterable, Iterator

from playground.events import REJECTED, Round

REPLACEMENT = "\ufffd"


class Detokenizer:
    def __init__(self, tokenizer, prompt_ids: list[int]):
        self.tokenizer = tokenizer
        self.ids = list(prompt_ids[-4:])  # a little context: some tokenizers drop a leading space
        self.prefix_at = 0  # ids[prefix_at:read_at] is decoded context already emitted
        self.read_at = len(self.ids)

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def _delta(self, ids: list[int]) -> str | None:
        before = self._decode(ids[self.prefix_at:self.read_at])
        after = self._decode(ids[self.prefix_at:])
        if len(after) > len(before) and not after.endswith(REPLACEMENT):
            return after[len(before):]
        return None

    def push(self, token_id: int) -> str:
        """Commit a token; returns the text it completes ('' while a character is incomplete)."""
        self.ids.append(token_id)
        delta = self._delta(self.ids)
        if delta is None:
            return ""
        self.prefix_at, self.read_at = self.read_at, len(self.ids)
        return delta

    def peek(self, token_id: int) -> str:
        """Text a token would add without committing it (for rejected draft tokens)."""
        delta = self._delta(self.ids + [token_id])
        return delta if delta is not None else self._decode([token_id])


def with_text(events: Iterable, tokenizer, prompt_ids: list[int]) -> Iterator:
    """The engine's events, each token's text filled in as it streams by: committed tokens (forced,
    accepted, corrected, bonus) extend the text in their round's order; a rejected draft shows what
    it would have added at its place."""
    detok = Detokenizer(tokenizer, prompt_ids)
    for event in events:
        if isinstance(event, Round):
            if event.tree is not None:  # a token tree's nodes, each as its own text
                event.tree["text"] = [detok.peek(t) for t in event.tree["tokens"]]
            for token in event.tokens:
                token.text = detok.peek(token.token_id) if token.kind == REJECTED else detok.push(token.token_id)
        yield event
