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

    def fork(self) -> "Detokenizer":
        """A copy to push guesses on (a round's refused drafts, a tree's branch), the text left as it is;
        only what is not yet emitted is copied."""
        other = Detokenizer.__new__(Detokenizer)
        other.tokenizer, other.ids = self.tokenizer, self.ids[self.prefix_at:]
        other.prefix_at, other.read_at = 0, self.read_at - self.prefix_at
        return other


def whole_characters(tokenizer, ids: list[int]) -> tuple[str, bool]:
    """The text of ids cut short (max new tokens, Stop) without the bytes of a character it ends inside, as the
    stream holds them back: (text, whether some were left out). It ended in U+FFFD on the page, in the download and
    the CLI (SmolLM2 writes a Chinese character in about 2 tokens: half of such runs)."""
    full = tokenizer.decode(ids, skip_special_tokens=True)
    if not full.endswith(REPLACEMENT):
        return full, False
    for n in range(1, min(4, len(ids)) + 1):  # a character is at most 4 bytes, one U+FFFD while cut short
        if not tokenizer.decode(ids[:-n], skip_special_tokens=True).endswith(REPLACEMENT):
            return full[:-1], True  # (not ids[:-n]'s text: its last token may hold a space or a character too)
    return full, False  # no character cut short: bytes that are no UTF-8 at all


def with_text(events: Iterable, tokenizer, prompt_ids: list[int]) -> Iterator:
    """The engine's events, each token's text filled in as it streams by: committed tokens (forced,
    accepted, corrected, bonus) extend the text in their round's order; a rejected draft shows what
    it would have added after the kept text and the drafts refused before it in a chain (each decoded
    alone, a character split over refused tokens read as U+FFFD, or joined a kept byte into one never
    guessed), a tree's refused sibling after the kept text alone; a tree's node, what it adds after the
    kept text and its ancestors."""
    detok = Detokenizer(tokenizer, prompt_ids)
    for event in events:
        if isinstance(event, Round):
            if event.tree is not None:
                event.tree["text"] = _branch_texts(detok, event.tree["tokens"], event.tree["parents"])
            guessed = None  # a chain round's refused drafts so far, after the kept text (a tree's are siblings)
            for token in event.tokens:
                if token.kind == REJECTED:
                    guessed = detok.fork() if guessed is None or event.tree is not None else guessed
                    token.text = guessed.push(token.token_id)
                else:
                    token.text = detok.push(token.token_id)
        yield event


def _branch_texts(detok: Detokenizer, tokens: list[int], parents: list[int]) -> list[str]:
    """Each node's text after its ancestors' (a parent is numbered before its children)."""
    forks, texts = [], []
    for token, parent in zip(tokens, parents):
        forks.append((forks[parent] if parent >= 0 else detok).fork())
        texts.append(forks[-1].push(token))
    return texts
