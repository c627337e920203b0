"""A runner on a static KV cache whose short passes run compiled.

The cache (transformers' StaticCache) is allocated once per generation at a capacity the run can
reach, rounded up to a power of two so runs share compiled graphs. A pass writes its keys and values
at positions [length, length + n); a rollback only moves the length (each layer's write pointer is
a tensor, so moving it costs no recompilation). Stale positions past the length need no clearing:
the causal mask hides every key after the query's own position.

Passes whose (width, logits kept) is in `shapes` (the draft's one-token step, the target's
k+1-token verify) run compiled (`torch.compile(..., dynamic=False)`): one graph per (model, width, capacity),
compiled on first use and kept for the life of the process (inductor's C++ backend with a C++
wrapper on a CPU; "reduce-overhead", i.e. CUDA graphs, on a GPU). Other widths (the prefill, a short
final round) run the same model eagerly on the same cache.

A compiled call first checks dynamo's guards: by default ~750 of them for the 2-layer demo draft
(its module tree, transformers' globals), 0.4-0.6 ms a call on this CPU, a tenth of a round. Each
model therefore gets a forward with a code object of its own (dynamo keeps graphs per code object,
so a call looks only among its model's graphs) whose guards look only at the call's arguments and at
torch's global state (`guards_on_arguments`): 0.05-0.1 ms a call. A runner's passes all run in
inference mode, so its cache and every graph agree on the tensors' kind."""
import time
import types
import weakref

import torch
from transformers import StaticCache

from playground.engine.runner import ModelRunner
from playground.errors import PlaygroundError

MIN_CAPACITY = 256
torch._dynamo.config.recompile_limit = 64  # graphs per model: every width and capacity
torch._dynamo.config.accumulated_recompile_limit = 1024


def capacity_bucket(need: int) -> int:
    """The smallest power of two >= need, at least MIN_CAPACITY."""
    return max(MIN_CAPACITY, 1 << max(need - 1, 1).bit_length())


def why_not_static(model: torch.nn.Module) -> str:
    """"" when a static cache with compiled passes serves this model, else why it stays eager.
    Static caches here assume every layer attends to the whole sequence (no sliding windows).
    A batch-invariant model (half precision on a CPU) stays eager too: compiled graphs sum in other
    orders per width, and SmolLM2 in bf16 then broke greedy identity on 2 of 3 prompts (measured)."""
    if getattr(model, "playground_batch_invariant", False):
        return "half precision on a CPU runs eager (compiled passes would change its greedy tokens)"
    text = model.config.get_text_config(decoder=True)
    types = getattr(text, "layer_types", None) or ["full_attention"]
    if not all(t == "full_attention" for t in types):
        return "sliding-window layers run eager (the static cache assumes full attention)"
    return ""


def compiled_forward(model: torch.nn.Module):
    """The model's compiled forward, made once per model and kept on it."""
    fn = model.__dict__.get("_playground_compiled")
    if fn is None:
        if model.device.type == "cuda":
            fn = torch.compile(own_forward(model), dynamic=False, mode="reduce-overhead")
        else:  # a C++ wrapper calls the kernels without a Python line per op (-6% a demo round, measured)
            options = {"cpp_wrapper": True, "guard_filter_fn": guards_on_arguments}
            fn = torch.compile(own_forward(model), dynamic=False, options=options)
        model.__dict__["_playground_compiled"] = fn
        model.__dict__["_playground_graphs"] = set()  # signatures compiled so far
        weakref.finalize(model, forget_graphs, fn._torchdynamo_orig_callable.__code__)
    return fn


def forget_graphs(code: types.CodeType) -> None:
    """Drop the graphs dynamo keeps on a freed model's code object, which outlives the model
    (without this, ~6.7 MiB per dropped test-sized model with three graphs, measured)."""
    torch._C._dynamo.eval_frame.reset_code(code)


ARGUMENTS = "inputs"  # the name of own_forward's keyword arguments, which guard sources start with


def own_forward(model: torch.nn.Module):
    """model.forward behind a function whose code object no other model shares."""
    def forward(**inputs):
        return model.forward(**inputs)
    code = forward.__code__.replace(co_name=f"forward_{type(model).__name__}_{id(model):x}")
    return types.FunctionType(code, forward.__globals__, code.co_name, None, forward.__closure__)


GLOBAL_STATE = {"GRAD_MODE", "GLOBAL_STATE", "TORCH_FUNCTION_STATE", "DEFAULT_DEVICE", "SHAPE_ENV",
                "AUTOGRAD_SAVED_TENSORS_HOOKS", "DETERMINISTIC_ALGORITHMS"}


def guards_on_arguments(entries) -> list[bool]:
    """Dynamo's guard filter: keep the guards on the call's arguments (token ids, positions,
    logits_to_keep, the cache's buffers, length pointers, layer count and capacity) and on torch's
    global state (inference mode...), the set of argument names included; drop those on the
    model's modules and on library globals.
    Sound here because the function is this model's own (own_forward) and nothing changes a loaded
    model's modules or weights, or transformers' functions, after its first compile (a graph would
    not see, say, a replaced lm_head or a hook added to a layer)."""
    return [e.guard_type in GLOBAL_STATE or e.name == ARGUMENTS or (e.name or "").startswith(ARGUMENTS + "[")
            for e in entries]


class StaticRunner(ModelRunner):
    """ModelRunner with a static cache of at least `capacity` positions and compiled passes for the
    (width, keep) pairs in `shapes`. `compile_s` adds up the time of passes that compiled a new graph."""

    def __init__(self, model: torch.nn.Module, vocab: int, capacity: int, shapes, threads: int | None = None,
                 vocab_map: torch.Tensor | None = None):
        super().__init__(model, vocab, threads, vocab_map)
        self.capacity = capacity_bucket(capacity)
        self.cache = self._allocated_cache(model)
        self.shapes = frozenset(shapes)
        self.compiled = compiled_forward(model)
        self.compile_s = 0.0
        self._length = 0

    def _allocated_cache(self, model: torch.nn.Module) -> StaticCache:
        """A StaticCache with its buffers [1, kv heads, capacity, head dim] allocated now, not on the
        first pass: compiled graphs guard on whether the cache is allocated, so a graph compiled
        (in `warm`) before a run's eager prefill would be compiled again inside the run."""
        cache = StaticCache(config=model.config, max_cache_len=self.capacity)
        if len(set(getattr(model, "hf_device_map", {}).values())) > 1:
            return cache  # spread over devices: each layer's buffers go where its first keys are
        text = model.config.get_text_config(decoder=True)
        heads = getattr(text, "num_key_value_heads", None) or text.num_attention_heads
        head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
        with torch.inference_mode():  # buffers of the kind the passes (in inference mode) write
            cache.early_initialization(1, heads, head_dim, model.dtype, model.device)
        return cache

    @property
    def length(self) -> int:
        return self._length

    def reset(self) -> None:
        self.crop(0)

    def crop(self, length: int) -> None:
        """Forget positions from `length` on: move every layer's write pointer back."""
        self._length = min(self._length, length)
        for layer in self.cache.layers:
            layer.cumulative_length.fill_(self._length)

    def pending_compiles(self) -> list[tuple[int, int]]:
        """The (width, keep) shapes not compiled yet at this capacity."""
        seen = self.model.__dict__["_playground_graphs"]
        return sorted(s for s in self.shapes if s + (self.capacity,) not in seen)

    def warm(self, before_each=None) -> float:
        """Compile every pending shape now (placeholder tokens at position 0, then forgotten);
        `before_each(width)` is called first for each. -> seconds spent compiling so far."""
        for width, keep in self.pending_compiles():
            if before_each:
                before_each(width)
            self.forward(torch.zeros(width, dtype=torch.long, device=self.device), keep=keep)
            self.reset()
        return self.compile_s

    @torch.inference_mode()  # always, warm-up included: a graph compiled with autograd on would be
    def _forward(self, ids: torch.Tensor, keep: int) -> torch.Tensor:  # compiled again in a run
        n = len(ids)
        if self._length + n > self.capacity:
            raise PlaygroundError(f"the static cache holds {self.capacity} positions; this pass needs "
                                  f"{self._length + n}")
        if self.t2d is not None:
            ids = self.t2d[ids]
        elif not ids.is_inference():
            ids = ids.clone()  # an inference tensor, as in every other call: graphs guard on the kind
        position = torch.arange(self._length, self._length + n, device=self.device)
        args = dict(input_ids=ids[None], past_key_values=self.cache, cache_position=position,
                    position_ids=position[None], use_cache=True, logits_to_keep=keep)
        if (n, keep) in self.shapes:
            logits = self._compiled_pass(args, (n, keep, self.capacity))
        else:
            logits = self.model(**args).logits
        self._length += n
        return self._full_width(logits[0])

    def _compiled_pass(self, args: dict, signature: tuple) -> torch.Tensor:
        seen = self.model.__dict__["_playground_graphs"]
        started = time.perf_counter()
        if self.device.type == "cuda":
            torch.compiler.cudagraph_mark_step_begin()
        logits = self.compiled(**args).logits
        if self.device.type == "cuda":
            logits = logits.clone()  # the graph's output buffer is overwritten by its next replay
        if signature not in seen:
            seen.add(signature)
            self.compile_s += time.perf_counter() - started
        return logits
