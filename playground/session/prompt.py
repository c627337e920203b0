"""A run's prompt: its text checked (length, UTF-8), encoded as its settings ask (chat template, system
prompt, the schema shown, thinking), its ids checked against the pair, and what of a request the model never
reads."""
import operator

from playground.config import CONSTRAINT_FIELDS, SCHEMA_HINT, thinks
from playground.errors import PlaygroundError
from playground.limits import MAX_PROMPT_CHARS, MAX_SYSTEM_CHARS, at_most
from playground.models.loading import Pair
from playground.session.chat_prompt import chat_ids


def prompt_ids_of(pair: Pair, s, text: str) -> list[int]:
    """A prompt as a Settings sends it: chat template, system prompt, its schema appended if asked,
    thinking as its constraint allows (config.thinks)."""
    constrained = any(getattr(s, name).strip() for name in CONSTRAINT_FIELDS)
    return encode_prompt(pair, text, s.chat, s.system or None, s.schema if s.schema_in_prompt else None,
                         thinks(constrained, s.think_budget))


def encode_prompt(pair: Pair, text: str, chat: bool = False, system: str | None = None,
                  schema: str | None = None, thinking: bool = True) -> list[int]:
    """Prompt text -> ids; `chat` applies the tokenizer's chat template (instruct models; the messages'
    text read as text, a special token's spelling too: chat_ids); `schema`
    (JSON Schema text) is appended to the request so the model knows the shape it must write;
    thinking=False asks the template for an answer without thinking (config.thinks)."""
    check_prompt_text(text, system)
    system = system if system and system.strip() else None  # (spaces alone replaced the template's own system
    # prompt, SmolLM2's, with nothing: a box that looks empty leaves it as it is; a review)
    if schema:
        text = f"{text}{SCHEMA_HINT}{schema.strip()}"
    tok = pair.tokenizer
    if chat and getattr(tok, "chat_template", None):
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": text}]
        return chat_ids(tok, messages, **({} if thinking else {"enable_thinking": False}))  # templates without it ignore it
    return tok(text, add_special_tokens=False).input_ids or [tok.eos_token_id]


def check_prompt_text(text: str, system: str | None = None) -> None:
    """The prompt and the system prompt as a run takes them, nothing loaded (an export refuses what a
    run refuses): PlaygroundError for the first one wrong."""
    if not isinstance(text, str) or not text.strip():
        raise PlaygroundError("the prompt is empty")
    at_most(len(text), MAX_PROMPT_CHARS, "the prompt's length (characters)")
    check_utf8(text, "the prompt")
    if system and system.strip():
        at_most(len(system), MAX_SYSTEM_CHARS, "the system prompt's length (characters)")
        check_utf8(system, "the system prompt")


def check_utf8(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PlaygroundError(f"{what} is not valid UTF-8 (at character {exc.start})") from None


def as_token_ids(ids) -> list[int]:
    """A library caller's prompt ids as a list of ints: a list or tuple of them, a 1-D tensor or array (each raised a
    TypeError, a RuntimeError or a ValueError from deep in a run; a review); text refused, saying how to encode it."""
    if isinstance(ids, (str, bytes)):
        raise PlaygroundError("the prompt ids are token ids, not text: encode text with session.encode_prompt(pair, text)")
    ids = ids.tolist() if hasattr(ids, "tolist") else ids
    try:
        return [operator.index(i) for i in ids]
    except TypeError:
        raise PlaygroundError(f"the prompt ids must be a sequence of whole numbers (one prompt's token ids), "
                              f"got {type(ids).__name__} {str(ids)[:60]}") from None


def check_prompt_ids(pair: Pair, ids: list[int], max_new_tokens: int = 0) -> list[int]:
    """In the vocabulary, and short enough that prompt + new tokens fit both models' context."""
    if not ids:
        raise PlaygroundError("the prompt is empty")
    bad = [i for i in ids if not 0 <= i < pair.vocab]
    if bad:
        raise PlaygroundError(f"prompt ids out of the vocabulary range 0..{pair.vocab - 1}: {bad[:5]}")
    if len(ids) + max_new_tokens > pair.context:
        raise PlaygroundError(f"the prompt is {len(ids)} tokens and max new tokens {max_new_tokens}: together more "
                              f"than the models' context of {pair.context} tokens; shorten the prompt or lower max "
                              "new tokens")
    return ids


def unread_prompt_parts(pair: Pair, chat: bool, system: str) -> str:
    """What of a request the model never reads ('' when it reads it all): a chat template the target's
    tokenizer lacks (the demo pair's), and with it or with chat off, the system prompt. A web API run
    on the demo pair with chat and a system prompt wrote the same text as without them, unsaid (an API review)."""
    system = bool(system and system.strip())  # (spaces alone are no system prompt: encode_prompt)
    if chat and not getattr(pair.tokenizer, "chat_template", None):
        unused = ", and the system prompt is unused" if system else ""
        return f"the target's tokenizer has no chat template: the prompt went in as written{unused}"
    return "the system prompt is unused: it goes in only through the chat template (chat off)" if system and not chat else ""
