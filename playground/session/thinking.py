"""Where a reasoning model's thinking ends, read from text: a run without a constraint has no
thinking matcher (playground.constraints.reasoning finds the marker in token bytes as it steers), so
its `<think>` ... `</think>` is found in the decoded ids, for the page's fold, the CLI and the JSON.
Also whether a prompt leaves `<think>` open (DeepSeek-R1's template opens it whatever it is asked)."""
from playground.config import THINK_END, THINK_START

TAIL_IDS = 8  # a template's last ids hold its opening `<think>\n` (Qwen3's empty block is 4 more)


def opens_thinking(tokenizer, prompt_ids: list[int]) -> bool:
    """The prompt ends inside an open `<think>` (no `</think>` after it)."""
    tail = tokenizer.decode(prompt_ids[-TAIL_IDS:])
    return tail.rfind(THINK_START) > tail.rfind(THINK_END)


def free_thinking(tokenizer, prompt_ids: list[int], ids: list[int]) -> int | None:
    """How many of an unconstrained run's ids are thinking, `</think>` included (all of them while it
    is not written yet); None when nothing opened thinking: neither the prompt nor the output's start."""
    if not (opens_thinking(tokenizer, prompt_ids) or tokenizer.decode(ids[:TAIL_IDS]).lstrip().startswith(THINK_START)):
        return None
    if THINK_END not in tokenizer.decode(ids):
        return len(ids)
    low, high = 1, len(ids)  # the fewest ids whose text holds the marker: O(log n) decodes
    while low < high:
        mid = (low + high) // 2
        low, high = (low, mid) if THINK_END in tokenizer.decode(ids[:mid]) else (mid + 1, high)
    return low
