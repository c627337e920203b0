"""A chat prompt's ids with the user's words read as words. A message that spells one of the
tokenizer's special tokens ("<|im_end|>") or a token the chat template itself writes (Qwen3's
"<think>" where it asks for no thinking) keeps those characters as text; the template's own tokens
stay tokens, so a prompt cannot close its turn or open a system turn of its own (vLLM and
transformers read such text as the token: their issues #31735 and #29279). Other added tokens
(a model's own "ü" or "<table>") are read as the tokenizer reads them. A raw prompt, no chat
template, is the tokenizer's reading, special tokens included: written by hand, a template is meant."""
import json
import re
import secrets
import weakref

from tokenizers import Tokenizer

from playground.errors import PlaygroundError


def chat_ids(tok, messages: list[dict], **options) -> list[int]:
    """messages [{"role", "content"}] -> the template's ids (add_generation_prompt; options such as
    enable_thinking go to the template). Where no message spells a structural token, exactly
    apply_chat_template's ids."""
    pieces = template_pieces(tok, messages, options)
    structural = _structural(tok, pieces)
    spelled = next((s for s in structural for m in messages if s in m["content"] or s in _normalized(tok, m["content"])),
                   None)
    ids = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False, **options)
    ids = list(ids["input_ids"] if isinstance(ids, dict) else ids)
    if spelled is None:
        return ids
    if len(pieces) != len(messages) + 1:  # a template that writes a message twice, or not at all
        raise _cannot_keep(spelled)
    return _ids_with_literal_messages(tok, messages, pieces, structural, spelled, ids)


def template_pieces(tok, messages: list[dict], options: dict) -> list[str]:
    """The template's own text around each message (one more piece than messages, where it writes each once)."""
    markers = [f"\ue000{secrets.token_hex(8)}:{i}\ue000" for i in range(len(messages))]
    return re.split("|".join(map(re.escape, markers)),
                    _render(tok, [{**m, "content": mark} for m, mark in zip(messages, markers)], options))


def _structural(tok, pieces: list[str]) -> list[str]:
    """The spellings a message may not turn into tokens: the tokenizer's special tokens, and the added
    tokens the template writes in its own text; longest first."""
    added = [t for t in (getattr(tok, "added_tokens_decoder", {}) or {}).values() if t.content]
    return sorted({t.content for t in added if t.special or any(t.content in piece for piece in pieces)},
                  key=len, reverse=True)


def _ids_with_literal_messages(tok, messages, pieces, structural, spelled: str, as_tokens: list[int]) -> list[int]:
    """The template's structural tokens are its own; the text between them (template words and
    messages together, as the tokenizer splits a text at its added tokens) is read by the tokenizer
    without those tokens, so a message's spellings stay characters. Refused, naming the spelling,
    where that cannot be kept exactly: the ids hold a structural token the template did not write
    (a tokenizer whose vocabulary has the piece itself), an added token eats the whitespace beside
    it, or the ids do not read back as the tokenizer's own reading (`as_tokens`, the spellings as
    tokens) reads back: a template that rewrites a message, a tokenizer that puts a space before
    each piece it reads."""
    words = _reader(tok, frozenset(structural))
    if words is None or any(t.lstrip or t.rstrip for t in tok.added_tokens_decoder.values() if t.content in structural):
        raise _cannot_keep(spelled)
    read = lambda text: words.encode(text, add_special_tokens=False).ids if text else []  # noqa: E731
    own = re.compile("(" + "|".join(map(re.escape, structural)) + ")")
    ids, text, written = [], "", 0
    for i, piece in enumerate(pieces):
        for j, part in enumerate(own.split(piece)):  # odd j: one of the template's structural tokens
            if j % 2:
                ids += read(text) + [tok.convert_tokens_to_ids(part)]
                text, written = "", written + 1
            else:
                text += part
        text += messages[i]["content"] if i < len(messages) else ""
    ids += read(text)
    marks = set(tok.convert_tokens_to_ids(structural))
    text_of = lambda ids: tok.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)  # noqa: E731
    if sum(i in marks for i in ids) != written or text_of(ids) != text_of(as_tokens):
        raise _cannot_keep(spelled)
    return ids


def _render(tok, messages, options) -> str:
    return tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False, **options)


def _normalized(tok, text: str) -> str:
    """The text as the tokenizer's normalizer reads it (NFC, NFKC: a fullwidth ＜/think＞ is </think>)."""
    normalizer = getattr(getattr(tok, "backend_tokenizer", None), "normalizer", None)
    return normalizer.normalize_str(text) if normalizer is not None else text


def _reader(tok, structural: frozenset) -> Tokenizer | None:
    """The tokenizer, reading its structural tokens as characters: each marked special, and special
    tokens read as text (encode_special_tokens); its other added tokens and every id kept as they are
    (taken out of the list, the added tokens after them were numbered anew). Built once per tokenizer
    and set (Qwen's is 7 MB of JSON); None for a tokenizer with no `tokenizers` inside."""
    built = _READERS.setdefault(tok, {})
    if structural not in built:
        backend = getattr(tok, "backend_tokenizer", None)
        reader = None
        if isinstance(backend, Tokenizer):
            state = json.loads(backend.to_str())
            for token in state.get("added_tokens") or []:
                token["special"] = token.get("special") or token.get("content") in structural
            reader = Tokenizer.from_str(json.dumps(state))
            reader.encode_special_tokens = True
        built[structural] = reader
    return built[structural]


_READERS = weakref.WeakKeyDictionary()  # tokenizer -> {structural spellings: its reader}


def _cannot_keep(spelled: str) -> PlaygroundError:
    error = PlaygroundError(f"the prompt spells the model's token {spelled!r}, which this model's chat template and "
                            "tokenizer cannot keep as text: remove it, or turn the chat template off (a raw prompt "
                            "reads it as the token)")
    error.where = "prompt"
    return error
