"""Text of each token as it is committed. The engine speaks token ids; the caller fills in their text
here, from the events as they come. Byte-level BPE (and SentencePiece's byte tokens) can split one UTF-8
character over several tokens, so a token's text is the growth of the decoded text, held back while a
character is incomplete (the approach of vLLM's incremental detokenizer), which the tokens' bytes tell
(a U+FFFD at the end may be one written whole)."""
import codecs
import re
from collections.abc import Iterable, Iterator

from transformers.convert_slow_tokenizer import bytes_to_unicode

from playground.events import REJECTED, Round

REPLACEMENT = "\ufffd"
CONTEXT = 4  # prompt tokens decoded before the output's: a character's bytes span at most 4 tokens
BYTE_LEVEL = {char: byte for byte, char in bytes_to_unicode().items()}  # GPT-2's printable stand-ins -> bytes
BYTE_FALLBACK = re.compile(r"<0x([0-9A-Fa-f]{2})>")  # SentencePiece's token of one byte


class Detokenizer:
    def __init__(self, tokenizer, prompt_ids: list[int]):
        self.tokenizer = tokenizer
        # a little context (some tokenizers drop a leading space), from a character's first byte
        self.ids = _from_a_character(tokenizer, prompt_ids[-CONTEXT:])
        held = _held(tokenizer, self.ids, self._decode(self.ids))  # a prompt ending inside a character: the output
        self.prefix_at = 0  # ids[prefix_at:read_at] is decoded context already emitted  # completes it
        self.read_at = len(self.ids) - (held or 0)  # (the tokens of that character's bytes alone: not read yet)
        # characters emitted past ids[prefix_at:read_at]'s text, from tokens whose last is cut; -1 for a prompt
        # ending in a token that ends one character and begins the next (its U+FFFD, never shown)
        self.ahead = -1 if held is None else 0

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def push(self, token_id: int) -> str:
        """Commit a token; returns the text it completes: its whole characters ('' while a character is
        incomplete). A token can end one character and begin the next (SmolLM2's 10003 is "о" and half of
        another Cyrillic letter): its "о" is its text, the next character its successor's (held back whole,
        the page showed "предл" where the output read "предло")."""
        self.ids.append(token_id)
        before = self._decode(self.ids[self.prefix_at:self.read_at])
        whole, cut = whole_text(self.tokenizer, self.ids[self.prefix_at:])
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


def whole_text(tokenizer, ids: list[int]) -> tuple[str, bool]:
    """ids' text without the bytes of a character it ends inside, and whether there were some (_held)."""
    text = tokenizer.decode(ids, skip_special_tokens=True)
    held = _held(tokenizer, ids, text)
    if held == 0:
        return text, False
    return (text[:-1] if held is None else tokenizer.decode(ids[:-held], skip_special_tokens=True)), True


def _held(tokenizer, ids: list[int], text: str) -> int | None:
    """How many of ids' last tokens hold the first bytes of a character none of them ends (0: `text`, their
    decoding, ends whole); None where a token ends one character and begins the next, or the bytes are unknown:
    then `text`'s last U+FFFD stands for it (byte-level BPE writes one). Read from the last tokens' bytes where their
    pieces say them (byte-level BPE, SentencePiece's byte tokens), else from a U+FFFD at the end: a U+FFFD written
    whole (SmolLM2's token 24211) is text (a prompt ending in one had it copied onto the output, a run that wrote
    one lost it). SentencePiece writes each byte of an unfinished character as a U+FFFD of its own, and the
    characters before them in the same run of byte tokens too (日 then E6 read '����'): its byte tokens are left out."""
    if not text.endswith(REPLACEMENT):
        return 0
    tail = [_piece_bytes(tokenizer, token_id) for token_id in ids[-CONTEXT:]]
    if None in tail:
        return None
    reader = codecs.getincrementaldecoder("utf-8")("replace")
    reader.decode(b"".join(tail))
    pending = len(reader.getstate()[0])  # the bytes it holds for a character not yet whole
    held = 0
    for n, piece in enumerate(reversed(tail)):
        if held == pending:
            return n
        held += len(piece)
        if held > pending:
            return None
    return len(tail) if held == pending else None


def _piece_bytes(tokenizer, token_id: int) -> bytes | None:
    """A token's bytes where its piece may hold part of a character (a byte-level BPE piece, SentencePiece's byte
    token); a piece of whole characters as its own text; None where a byte-level piece is not one of GPT-2's."""
    if token_id in tokenizer.all_special_ids:  # (decoded as nothing: the bytes around it join)
        return b""
    if (added := tokenizer.added_tokens_decoder.get(token_id)) is not None:  # (its text as written)
        return added.content.encode()
    piece = tokenizer.convert_ids_to_tokens(token_id)
    if not isinstance(piece, str):
        return None
    if one := BYTE_FALLBACK.fullmatch(piece):
        return bytes([int(one[1], 16)])
    if not _byte_level(tokenizer):
        return piece.encode()
    return bytes(BYTE_LEVEL[char] for char in piece) if all(char in BYTE_LEVEL for char in piece) else None


def _byte_level(tokenizer) -> bool:
    """Whether the tokenizer decodes GPT-2's byte stand-ins (Qwen, SmolLM2, DeepSeek)."""
    return "ByteLevel" in str(getattr(getattr(tokenizer, "backend_tokenizer", None), "decoder", ""))


def dangling(tokenizer, prompt_ids: list[int]) -> list[int]:
    """A prompt's last tokens when it ends inside a character (ids given as such, `--prompt-ids`): the output's
    first bytes complete that character, which is the output's text (it read U+FFFD, and its stream lost it);
    [] for a prompt that ends whole, as every text prompt does (one ending in a U+FFFD of its own too)."""
    tail = _from_a_character(tokenizer, prompt_ids[-CONTEXT:])
    return tail if whole_text(tokenizer, tail)[1] else []


def _from_a_character(tokenizer, ids: list[int]) -> list[int]:
    """ids without their first tokens of one byte that ends a character begun before them (a prompt's last tokens,
    taken as context): SentencePiece decodes a run of byte tokens that does not start a character as a U+FFFD for
    each byte, the characters after them in the run too."""
    ids = list(ids)
    while ids and (first := _piece_bytes(tokenizer, ids[0])) and len(first) == 1 and first[0] & 0xC0 == 0x80:
        ids.pop(0)  # (10xxxxxx: a continuation byte)
    return ids


def output_text(tokenizer, ids: list[int], lead: list[int] = ()) -> str:
    """ids' text; after `lead` (dangling), from the character the prompt began."""
    if not lead:
        return tokenizer.decode(ids, skip_special_tokens=True)
    before = whole_text(tokenizer, list(lead))[0]  # (without its U+FFFDs)
    return tokenizer.decode(list(lead) + list(ids), skip_special_tokens=True)[len(before):]


def whole_characters(tokenizer, ids: list[int], lead: list[int] = ()) -> tuple[str, bool]:
    """The text of ids cut short (max new tokens, Stop) without the bytes of a character it ends inside, as the
    stream holds them back: (text, whether some were left out). It ended in U+FFFD on the page, in the download and
    the CLI (SmolLM2 writes a Chinese character in about 2 tokens: half of such runs). Its last token's whole
    characters stay (SmolLM2's 10003 is "о" and half of the next letter), as the stream shows them."""
    text, cut = whole_text(tokenizer, list(lead) + list(ids))
    return text[len(whole_text(tokenizer, list(lead))[0]) if lead else 0:], cut


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
