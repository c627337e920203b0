"""Where a reasoning model's thinking ends in a run without a constraint: no thinking matcher steers
such a run (playground.constraints.reasoning finds the marker in token bytes as it masks), so its
`<think>` ... `</think>` is found by token id, for the page's fold, the CLI and the JSON. Reasoning
models' tokenizers (Qwen3, DeepSeek-R1) hold both markers as added tokens of their own; a tokenizer
without them has no thinking here, whatever its text says (a Qwen2.5 answer quoting "<think>" is
an answer). Also whether a prompt leaves `<think>` open: DeepSeek-R1's template ends in `<think>\n`."""
from playground.config import THINK_END, THINK_START

LEAD_IDS = 4  # whitespace tokens an output may start with before its `<think>`


def markers(tokenizer) -> tuple[int, int] | None:
    """The ids of `<think>` and `</think>` where both are added tokens, else None."""
    added = tokenizer.get_added_vocab()
    return (added[THINK_START], added[THINK_END]) if THINK_START in added and THINK_END in added else None


def opens_thinking(tokenizer, prompt_ids: list[int]) -> bool:
    """The prompt ends in `<think>` and whitespace (a user's text holding `<think>` is followed by the
    template's own tokens, and Qwen3's empty block by `</think>`)."""
    ids = markers(tokenizer)
    if ids is None or ids[0] not in prompt_ids[-LEAD_IDS:]:
        return False
    after = len(prompt_ids) - prompt_ids[::-1].index(ids[0])
    return not tokenizer.decode(prompt_ids[after:]).strip()


def free_thinking(tokenizer, prompt_ids: list[int], ids: list[int]) -> int | None:
    """How many of an unconstrained run's ids are thinking, `</think>` included (all of them while it
    is not written yet); None when nothing opened thinking: neither the prompt nor the output's start."""
    found = markers(tokenizer)
    if found is None:
        return None
    start, end = found
    lead = next((i for i, t in enumerate(ids[:LEAD_IDS]) if tokenizer.decode([t]).strip()), None)
    if not (opens_thinking(tokenizer, prompt_ids) or (lead is not None and ids[lead] == start)):
        return None
    return ids.index(end) + 1 if end in ids else len(ids)
