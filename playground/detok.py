"""Text of each token as it is committed. The engine speaks token ids; the caller fills in their text
here, from the events as they come. Byte-level BPE can split one UTF-8 character over several
tokens, so a token's text is the growth of the decoded text, held back while a character is
incomplete (the approach of vLLM's incremental detokenizer)."""
from collections.abc import Iterable, Iterator

from playground.events import REJECTED, Round

REPLACEMENT = "\ufffd"
CONTEXT = 4  # prompt tokens decoded before the output's: a character's bytes span at most 4 tokens


class Detokenizer:
    def __init__(self, tokenizer, prompt_ids: list[int]):
        self.tokenizer = tokenizer
        self.ids = list(prompt_ids[-CONTEXT:])  # a little context: some tokenizers drop a leading space
        self.prefix_at = 0  # ids[prefix_at:read_at] is decoded context already emitted
        self.read_at = len(self.ids)
        # characters emitted past ids[prefix_at:read_at]'s text, from tokens whose last is cut; -1 for a prompt
        # that ends inside a character (its U+FFFD, never shown: the output's first token completes it)
        self.ahead = -1 if dangling(tokenizer, prompt_ids) else 0

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def push(self, token_id: int) -> str:
        """Commit a token; returns the text it completes: its whole characters ('' while a character is
        incomplete). A token can end one character and begin the next (SmolLM2's 10003 is "о" and half of
        another Cyrillic letter): its "о" is its text, the next character its successor's (held back whole,
        the page showed "предл" where the output read "предло")."""
        self.ids.append(token_id)
        before = self._decode(self.ids[self.prefix_at:self.read_at])
        after = self._decode(self.ids[self.prefix_at:])
        cut = after.endswith(REPLACEMENT)  # (one U+FFFD for the incomplete character at the end)
        whole = after[:-1] if cut else after
        delta = whole[len(before) + self.ahead:]
        if cut:
            self.ahead += len(delta)
        else:
            self.prefix_at, self.read_at, self.ahead = self.read_at, len(self.ids), 0
        return delta

    def fork(self) -> "Detokenizer":
        """A copy to push guesses on (a round's refused drafts, a tree's branch), the text left as it is;
        only what is not yet emitted is copied."""
        other = Detokenizer.__new__(Detokenizer)
        other.tokenizer, other.ids = self.tokenizer, self.ids[self.prefix_at:]
        other.prefix_at, other.read_at, other.ahead = 0, self.read_at - self.prefix_at, self.ahead
        return other


def dangling(tokenizer, prompt_ids: list[int]) -> list[int]:
    """A prompt's last tokens when it ends inside a character (ids given as such, `--prompt-ids`): the output's
    first bytes complete that character, which is the output's text (it read U+FFFD, and its stream lost it);
    [] for a prompt that ends whole, as every text prompt does."""
    tail = list(prompt_ids[-CONTEXT:])
    return tail if tokenizer.decode(tail, skip_special_tokens=True).endswith(REPLACEMENT) else []


def output_text(tokenizer, ids: list[int], lead: list[int] = ()) -> str:
    """ids' text; after `lead` (dangling), from the character the prompt began."""
    if not lead:
        return tokenizer.decode(ids, skip_special_tokens=True)
    before = tokenizer.decode(list(lead), skip_special_tokens=True)[:-1]  # (without its U+FFFD)
    return tokenizer.decode(list(lead) + list(ids), skip_special_tokens=True)[len(before):]


def whole_characters(tokenizer, ids: list[int], lead: list[int] = ()) -> tuple[str, bool]:
    """The text of ids cut short (max new tokens, Stop) without the bytes of a character it ends inside, as the
    stream holds them back: (text, whether some were left out). It ended in U+FFFD on the page, in the download and
    the CLI (SmolLM2 writes a Chinese character in about 2 tokens: half of such runs). Its last token's whole
    characters stay (SmolLM2's 10003 is "о" and half of the next letter), as the stream shows them."""
    full = output_text(tokenizer, ids, lead)
    return (full[:-1], True) if full.endswith(REPLACEMENT) else (full, False)


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
