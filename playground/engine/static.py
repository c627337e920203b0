"""A runner on a persistent static KV cache (playground.engine.static_cache) whose short passes run
compiled.

Each model keeps one cache per capacity for the life of the process, so its compiled graphs (and
CUDA graphs, which hold the cache's addresses) serve every later run: on a CPU capacities are powers
of two from 256 (a small cache keeps attention cheap there); on a GPU there are two, GPU_CAPACITY
for every run that fits and the pair's whole context for longer ones, so no prompt length or
max-new-tokens compiles again (attention reads the whole capacity behind its mask: 4096 positions
of Qwen2.5-7B are 235 MB, 1.5% of a pass's weights).

Passes whose (width, logits kept) is in `shapes` run compiled (`torch.compile(..., dynamic=False)`):
one graph per (model, width, capacity), compiled on first use and kept for the life of the process
(inductor's C++ backend with a C++ wrapper on a CPU; Triton on a GPU, where each such pass is also
captured as a CUDA graph and replayed, unless fused rounds capture the whole round: see
playground.engine.graphs and playground.engine.fused). Other widths (the prefill, a
short final round) run the same model eagerly on the same cache.

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

from playground.engine.attention import fold_grouped_heads, folds_on
from playground.engine import dependent_launch, layer_regions
from playground.engine.graphs import program
from playground.engine.runner import ModelRunner, full_width
from playground.engine.static_cache import PointerCache, borrow_cache
from playground.errors import PlaygroundError

MIN_CAPACITY = 256
GPU_CAPACITY = 4096


def capacity_bucket(need: int, device: str = "cpu", longest: int | None = None) -> int:
    """The cache capacity for a run needing `need` positions: on a CPU the smallest power of two
    >= need, at least MIN_CAPACITY; on a GPU GPU_CAPACITY, or `longest` (the pair's context) beyond."""
    if device == "cuda":  # a multiple of 64: attention kernels want aligned key lengths
        return GPU_CAPACITY if need <= GPU_CAPACITY else -(-max(need, longest or 0) // 64) * 64
    return max(MIN_CAPACITY, 1 << max(need - 1, 1).bit_length())


def allow_recompiles() -> None:
    """Dynamo's limits on graphs per code object, raised when a compiled pass is first asked for
    (not on import): one graph per width and capacity of each model."""
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 64)
    torch._dynamo.config.accumulated_recompile_limit = max(torch._dynamo.config.accumulated_recompile_limit, 1024)


def why_not_static(model: torch.nn.Module) -> str:
    """"" when a static cache with compiled passes serves this model, else why it stays eager.
    Static caches here assume every layer attends to the whole sequence (no sliding windows).
    A batch-invariant model (models/batch_invariant.py: bf16, or a float32 one past 100M parameters, on a CPU) stays
    eager too: compiled graphs sum in other orders per width, and SmolLM2 in bf16 then broke greedy
    identity on 2 of 3 prompts (measured)."""
    if getattr(model, "playground_batch_invariant", False):
        return ("a batch-invariant CPU model runs eager (its passes give the same logits at any width; compiled "
                "ones would not, and would change its greedy tokens)")
    if len(set(getattr(model, "hf_device_map", {}).values())) > 1:
        return "a model spread over several devices runs eager (its static cache lives on one)"
    text = model.config.get_text_config(decoder=True)
    types = getattr(text, "layer_types", None) or ["full_attention"]
    if not all(t == "full_attention" for t in types):
        return "sliding-window layers run eager (the static cache assumes full attention)"
    return ""


def compiled_forward(model: torch.nn.Module):
    """The model's compiled forward, made once per model and kept on it."""
    fn = model.__dict__.get("_playground_compiled")
    if fn is None:
        if folds_on(model.device):  # before the first compile: no copy of the cache per query head
            fold_grouped_heads(model)
        allow_recompiles()
        by_layer = layer_regions.by_layer_on(model.device) and layer_regions.mark_layer_regions(model) > 0
        options = {"guard_filter_fn": guards_on_arguments, **dependent_launch.inductor_options(model.device)}
        if model.device.type == "cpu" and not by_layer:  # a C++ wrapper calls the kernels without a Python line
            options["cpp_wrapper"] = True  # per op (-6% a demo round); it cannot call a layer's region
        fn = torch.compile(own_forward(model), dynamic=False, options=options)  # on CUDA: graphs captured by hand
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


class CacheBusy(PlaygroundError):
    """The model's persistent cache is held by another run (concurrent generations)."""


class DevicePass:
    """One pass of a model on its static cache as a function of device tensors alone: ids [n] ->
    the pair's logits [keep, V], keys and values written at the pointer, the pointer advanced by n.
    No host sync and no Python state, so a CUDA graph can capture it; it holds no runner, so graphs
    kept past a run keep only the model and its cache alive."""

    def __init__(self, model, compiled, cache: PointerCache, shapes, vocab: int, t2d, d2t):
        self.model, self.compiled, self.cache, self.shapes = model, compiled, cache, shapes
        self.vocab, self.t2d, self.d2t, self.device = vocab, t2d, d2t, model.device

    def __call__(self, ids: torch.Tensor, keep: int) -> torch.Tensor:
        n = ids.shape[0]
        if self.t2d is not None:
            ids = self.t2d[ids]
        fn = self.compiled if (n, keep) in self.shapes else self.model
        logits = fn(input_ids=ids[None], past_key_values=self.cache, use_cache=True, logits_to_keep=keep).logits
        self.cache.pointer.add_(n)
        return full_width(logits[0], self.vocab, self.d2t)


class StaticRunner(ModelRunner):
    """ModelRunner on the model's persistent cache of at least `capacity` positions (a GPU's long
    runs up to `longest`), with compiled passes for the (width, keep) pairs in `shapes`, replayed as
    CUDA graphs on a GPU unless `capture` is off (fused rounds capture whole rounds instead and
    would never replay a pass's own graph). `compile_s` adds up the time of passes that compiled a
    new graph. Raises CacheBusy when another live run holds that cache."""

    def __init__(self, model: torch.nn.Module, vocab: int, capacity: int, shapes, threads: int | None = None,
                 vocab_map: torch.Tensor | None = None, longest: int | None = None, capture: bool = True):
        super().__init__(model, vocab, threads, vocab_map)
        self.capacity = capacity_bucket(capacity, self.device.type, longest)
        cache = borrow_cache(model, self.capacity, self)
        if cache is None:
            raise CacheBusy(f"the static cache of {type(model).__name__} is in use by another run")
        self.cache, self.shapes = cache, frozenset(shapes)
        self.compiled = compiled_forward(model)
        self.device_pass = DevicePass(model, self.compiled, cache, self.shapes, vocab, self.t2d, self.d2t)
        self.capture = capture and self.device.type == "cuda"
        self.compile_s = 0.0
        self._length = 0
        cache.move_to(0)

    @property
    def length(self) -> int:
        return self._length

    def reset(self) -> None:
        self.crop(0)

    def crop(self, length: int) -> None:
        """Forget positions from `length` on: move the cache's write pointer back."""
        self._length = min(self._length, length)
        self.cache.move_to(self._length)

    def seek(self, length: int) -> None:
        """Write next at `length`, before or past the runner's own count (fused programs move the
        cache's pointer themselves; every position before `length` must hold its token)."""
        self._length = length
        self.cache.move_to(length)

    def pending_compiles(self) -> list[tuple[int, int]]:
        """The (width, keep) shapes not compiled yet at this capacity (on a GPU: or not captured yet
        on this cache, whose graphs are its own)."""
        seen = self.model.__dict__["_playground_graphs"]
        return sorted(s for s in self.shapes if s + (self.capacity,) not in seen
                      or (self.capture and ("pass", *s, self.vocab) not in self.cache.graphs))

    def warm(self, before_each=None) -> float:
        """Compile (and on a GPU capture) every pending shape now (placeholder tokens at position 0,
        then forgotten); `before_each(width)` is called first for each. -> seconds spent so far."""
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
        if not ids.is_inference():
            ids = ids.clone()  # an inference tensor, as in every other call: graphs guard on the kind
        started, signature = time.perf_counter(), (n, keep, self.capacity)
        if (n, keep) not in self.shapes:
            logits = self.device_pass(ids, keep)
        elif self.capture:
            logits = self._replayed(ids, keep)
        else:
            logits = self.device_pass(ids, keep)
        seen = self.model.__dict__["_playground_graphs"]
        if (n, keep) in self.shapes and signature not in seen:
            seen.add(signature)
            if logits.device.type == "cuda":
                torch.cuda.synchronize(logits.device)  # the compiled kernels' first run counts too
            self.compile_s += time.perf_counter() - started
        self._length += n
        return logits

    def _replayed(self, ids: torch.Tensor, keep: int) -> torch.Tensor:
        """The pass replayed from its CUDA graph (captured on first use, kept with the cache)."""
        key = ("pass", len(ids), keep, self.vocab)
        found = self.cache.graphs.get(key)
        if found is None:
            buffer, device_pass = torch.zeros_like(ids), self.device_pass  # the graph may not hold the runner
            found = self.cache.graphs[key] = (buffer, program(lambda: device_pass(buffer, keep), True))
            self.cache.move_to(self._length)  # capture's warm-up passes advanced the pointer
        buffer, graph = found
        buffer.copy_(ids)
        return graph()
