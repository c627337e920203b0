"""Static KV caches kept for the life of a model, at most two per capacity for each run sharing the
device, each with one write pointer.

transformers' StaticCache gives every layer its own write pointer (`cumulative_length`) that each
pass advances in place: moving a cache back means one kernel per layer, and a CUDA graph that ran
passes advances all of them again on every replay. Here all layers share one pointer, a 0-d long
tensor on the model's device: a pass writes its n keys and values at [pointer, pointer + n), the
attention mask and the rotary positions read the same pointer (transformers derives both from
`get_seq_length`), and the caller advances it once per pass. A rollback is one `fill_`.

Positions past the pointer hold stale keys that need no clearing: the causal mask hides every key
after the query's own position. Everything here is made in inference mode, like every pass that
uses it (an inference tensor cannot be updated in place outside inference mode).

A model's caches are made once per capacity and kept on the model (CUDA graphs captured on them
hold their buffers' addresses): two per capacity for each run sharing the device, a speculative run
and the target alone interleaved beside it; a run borrows one, and a run wanting one while all are
held gets None (the caller then runs eager on a cache of its own)."""
import threading
import weakref

import torch
from transformers.cache_utils import Cache, StaticLayer

from playground import limits


class PointerLayer(StaticLayer):
    """A StaticLayer that writes at the cache's shared pointer and never advances it itself."""

    def __init__(self, max_cache_len: int, pointer: torch.Tensor):
        super().__init__(max_cache_len=max_cache_len)
        self.pointer = pointer  # shared by every layer of the cache

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        super().lazy_initialization(key_states, value_states)
        self.cumulative_length = self.pointer  # what transformers reads as the length

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        positions = self.pointer + torch.arange(key_states.shape[-2], device=self.pointer.device)  # [n]
        self.keys.index_copy_(2, positions, key_states)  # keys [1, kv heads, capacity, head dim]
        self.values.index_copy_(2, positions, value_states)
        return self.keys, self.values

    def get_seq_length(self) -> torch.Tensor:
        return self.pointer

    def reset(self) -> None:
        with torch.inference_mode():  # the pointer is an inference tensor (the crash of issue 30 otherwise)
            self.pointer.zero_()


class PointerCache(Cache):
    """One static cache of `capacity` positions for batch 1, allocated now, with one pointer."""

    def __init__(self, model: torch.nn.Module, capacity: int):
        text = model.config.get_text_config(decoder=True)
        heads = getattr(text, "num_key_value_heads", None) or text.num_attention_heads
        head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
        with torch.inference_mode():
            self.pointer = torch.zeros((), dtype=torch.long, device=model.device)
            super().__init__(layers=[PointerLayer(capacity, self.pointer) for _ in range(text.num_hidden_layers)])
            self.early_initialization(1, heads, head_dim, model.dtype, model.device)
        torch._dynamo.mark_static_address(self.pointer)
        self.capacity = capacity
        self.owner = None  # weakref to the runner using it now
        self.graphs: dict = {}  # CUDA graphs captured on this cache (playground.engine.static)

    def move_to(self, length: int) -> None:
        """Set the write pointer (the number of positions the next pass sees before its own)."""
        with torch.inference_mode():
            self.pointer.fill_(length)


def max_caches() -> int:
    """Caches per model and capacity: a speculative run and the target alone interleaved beside it, for
    each run the host lets share the device (with fewer, a comparison's second side found both held and
    ran eager, and its speedup set compiled against eager)."""
    return 2 * limits.CONCURRENCY


def borrow_cache(model: torch.nn.Module, capacity: int, owner) -> PointerCache | None:
    """A cache of this capacity for `owner` until `owner` is freed or gives it back: the first of
    the model's caches no live owner holds, or a new one (made once, then kept); None when
    max_caches() are all held."""
    with BORROWING:  # two runs starting at once must not take the same cache
        caches = model.__dict__.setdefault("_playground_caches", {}).setdefault(capacity, [])
        cache = next((c for c in caches if c.owner is None or c.owner() in (None, owner)), None)
        if cache is None:
            if len(caches) >= max_caches():
                return None
            cache = PointerCache(model, capacity)
            caches.append(cache)
        cache.owner = weakref.ref(owner)
        return cache


BORROWING = threading.Lock()

