"""A chat prompt's ids with the user's words read as words. A message that spells one of the
tokenizer's added tokens ("<|im_end|>", Qwen3's "</think>") keeps those characters as text; the
chat template's own tokens stay tokens, so a prompt cannot close its turn, open a system turn or
end a thinking block of its own (vLLM and transformers read such text as the token: their issues
#31735 and #29279). A raw prompt, no chat template, is the tokenizer's reading, added tokens
included: written by hand, a template is meant."""
import json
import re
import secrets
import weakref

from tokenizers import Tokenizer

from playground.errors import PlaygroundError


def chat_ids(tok, messages: list[dict], **options) -> list[int]:
    """messages [{"role", "content"}] -> the template's ids (add_generation_prompt; options such as
    enable_thinking go to the template). Where no message spells an added token, exactly
    apply_chat_template's ids."""
    spelled = [s for s in added_texts(tok) if any(s in m["content"] for m in messages)]
    if not spelled:
        ids = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False, **options)
        return list(ids["input_ids"] if isinstance(ids, dict) else ids)
    return _ids_with_literal_messages(tok, messages, spelled[0], options)


def added_texts(tok) -> list[str]:
    """The spellings a tokenizer reads as one token wherever they stand in a text (special or not:
    split_special_tokens leaves the others, Qwen3's <think>, as tokens), longest first."""
    added = getattr(tok, "added_tokens_decoder", {}) or {}
    return sorted({t.content for t in added.values() if t.content}, key=len, reverse=True)


def _ids_with_literal_messages(tok, messages, spelled: str, options) -> list[int]:
    """The template rendered around a marker per message gives its own text. Its added tokens are
    the template's; the text between them (template words and messages together, as the tokenizer
    splits a text at its added tokens) is read by the tokenizer without its added tokens, so a
    message's spellings stay characters. Refused, naming the spelling, where the ids do not give back
    the template's text (a template that rewrites a message)."""
    nonce = secrets.token_hex(8)
    markers = [f"\ue000{nonce}:{i}\ue000" for i in range(len(messages))]
    pieces = re.split("|".join(map(re.escape, markers)),  # the template's own text, around each message
                      _render(tok, [{**m, "content": mark} for m, mark in zip(messages, markers)], options))
    if len(pieces) != len(messages) + 1:
        raise _cannot_keep(spelled)
    words = _without_added_tokens(tok)
    if words is None:
        raise _cannot_keep(spelled)
    read = lambda text: words.encode(text, add_special_tokens=False).ids if text else []  # noqa: E731
    own = re.compile("(" + "|".join(map(re.escape, added_texts(tok))) + ")")
    ids, text = [], ""
    for i, piece in enumerate(pieces):
        for j, part in enumerate(own.split(piece)):  # odd j: one of the template's added tokens
            if j % 2:
                ids += read(text) + [tok.convert_tokens_to_ids(part)]
                text = ""
            else:
                text += part
        text += messages[i]["content"] if i < len(messages) else ""
    ids += read(text)
    if tok.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False) != _render(tok, messages, options):
        raise _cannot_keep(spelled)
    return ids


def _render(tok, messages, options) -> str:
    return tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False, **options)


def _without_added_tokens(tok) -> Tokenizer | None:
    """The tokenizer's own model, normalizer and pre-tokenizer, with no added token to match (built
    once per tokenizer: Qwen's is 7 MB of JSON); None for a tokenizer with no `tokenizers` inside."""
    if tok not in _WORDS:
        backend = getattr(tok, "backend_tokenizer", None)
        state = json.loads(backend.to_str()) if isinstance(backend, Tokenizer) else None
        if state is not None:
            state["added_tokens"] = []
        _WORDS[tok] = Tokenizer.from_str(json.dumps(state)) if state is not None else None
    return _WORDS[tok]


_WORDS = weakref.WeakKeyDictionary()  # tokenizer -> its reader without added tokens


def _cannot_keep(spelled: str) -> PlaygroundError:
    error = PlaygroundError(f"the prompt spells the model's token {spelled!r}, which this model's chat template and "
                            "tokenizer cannot keep as text: remove it, or turn the chat template off (a raw prompt "
                            "reads it as the token)")
    error.where = "prompt"
    return error
