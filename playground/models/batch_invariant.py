"""Make a CPU model's logits independent of how many tokens a pass carries, so that a verify pass
over k+1 tokens gives bitwise the logits that k+1 one-token passes give, and greedy speculation
stays identical to the target alone (bfloat16, and float32 models past placement.SMALL_MODEL).

Why it is needed: in bfloat16 on a CPU (oneDNN), a matrix product with one input row takes another
kernel than one with two or more rows (a matrix-vector product that sums in another order), and
PyTorch's fused attention (SDPA) picks its blocking from the number of queries. Measured on
SmolLM2-135M (2-core AMD EPYC with AVX512-BF16, torch 2.13): 5-15% of greedy next tokens then
differ between passes of k+1 tokens and of one. Products of 2 to 16 rows agree row by row, bitwise,
and so does the eager attention (matmul, softmax, matmul), once every product is oneDNN's: ATen keeps
those of at most 16^3 multiply-adds for its own kernel (_product pads the attention's past that; a
model's linear layers are far past it). Hence: eager attention, and every
one-row linear computed as two identical rows, keeping the first, except where the packed kernel's one
row is bitwise a row of its wider products on this machine (checked at load: one_row_is_a_row), and every
such linear layer's pass wider than 16 rows taken 16 at a time (at_most_widest: with AMX, 33 rows and more sum
otherwise; float32 layers go through row_products' kernel instead, whole, where it is built; the attention's
products are not split: eager_rows_agree probes them up to 64 tokens). On a CPU with AVX2 only (bfloat16
emulated; 2-core AMD EPYC, torch 2.13) the products still agree but the eager attention's rows do
not: greedy speculation on SmolLM2 differed from the target alone at token 66 of a held-out prompt,
chains and trees alike, and matched it with the row-invariant attention below (placement.attention_for
picks that there). Nor with AMX (2-core Intel Xeon, torch 2.13: oneDNN's AMX products sum a row's
keys in an order that follows the key count; greedy SmolLM2 left the target alone at token 16):
there the products of weights and values are taken over fixed, zero-padded blocks of keys (_padded_blocks).

What it costs: with unpacked weights, little: a bfloat16 pass of 1 to 5 tokens costs about the
same (61-73 ms for SmolLM2-135M on 2 cores; whole target-alone runs with one-row products were
1.08x faster), while float32's small products are not flat
(72 ms at one token, 109-134 ms at two to five). With packed weights (playground.models.packed_linear) a
one-token pass costs 38 ms with two rows against 34 ms with one (and a 4-token pass 33 ms): the
exact target alone ran about 1.18x slower than one with one-row products, whose tokens differ. Each model's
products are timed both ways at load (time_plain_ratio; a 2-core Xeon with AMX, bfloat16, when one decoder layer
was timed: the plain ones 0.77x as fast; every layer on the decode thread, float32 held to AVX2 on a 2-core AMD EPYC,
row_products' kernel against MKL: 0.72x), and the speedup's note says so where plain ones are faster.

float32 (CPUs without bf16 dot products, most laptops): MKL's small float32 products are neither
flat nor row-invariant, oneDNN's from packed weights are both (rows of 2 to 16 bitwise; one row
too with AVX2 kernels, not with AVX512 ones: one_row_is_a_row tells at load), and row_products' own
C kernel is both at any width and thread count, faster still and without a packed copy: float32
linear layers take it wherever it was built (row_kernel_serves), oneDNN's elsewhere. The eager attention's
float32 matmuls are not: ROW_INVARIANT attention computes each query alone, as a one-token pass
does. SmolLM2-135M in float32 on 2 cores (AMD EPYC with oneDNN, ATen and MKL held to AVX2), a
pass of 1/2/3/4/5 tokens after 150: 44/43/46/48/51 ms (1.16x at 5, interleaved medians), bitwise
equal to one-token passes; it was 55/88/107/78/70 ms with SDPA and MKL, rows differing by 5e-5."""
import contextlib
import contextvars
import functools
from dataclasses import dataclass

import torch
from torch import nn
from transformers import AttentionInterface
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface
from transformers.models.llama.modeling_llama import repeat_kv

from playground.cpu_isa import amx_allowed
from playground.models import row_attention, row_layers, row_products
from playground.models.decode_threads import TIMED_UP_TO, parameters
from playground.models.in_turns import medians_in_turns, on_threads, one_row_calls, seconds_of
from playground.models.packed_linear import ATTR, linear, pack, packed_forward

ATTENTION = "playground_eager"  # bfloat16 with AVX512-BF16 and oneDNN without AMX: eager attention (rows do not
# depend on the query count there, placement.eager_rows_invariant), a tree's rows alone
ROW_INVARIANT = "playground_row_invariant"  # float32, and bfloat16 elsewhere: the same, by explicit reductions (below)
LOADED_IN_HALVES = "playground_loaded_in_halves"  # set on a float32 model whose linear weights loaded in bfloat16


PROMPT_PASS = contextvars.ContextVar("playground_prompt_pass", default=False)  # see prompt_pass


@contextlib.contextmanager
def prompt_pass():
    """Within: the pass that starts a run (ModelRunner.prefill, over an empty cache). Every run of a
    model starts with that very pass (the same tokens, one pass), so its rows need to agree only
    with themselves, not with narrower passes: both attentions here take them in one batch there
    (SmolLM2-135M in float32 on 2 cores, a 500-token prompt's pass: 0.47 s against 1.20 row by row)."""
    token = PROMPT_PASS.set(True)
    try:
        yield
    finally:
        PROMPT_PASS.reset(token)


def row_invariant_attention(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """Causal attention computed one query at a time over exactly the keys it may see: query
    [B, H, q, d], key and value [B, KV, kv, d] (the pass's q tokens last) -> ([B, q, H, d], None).
    Each row is then the very computation a one-token pass makes for that position (the same
    products on the same shapes), whatever the pass's width: bitwise the same rows. Batched
    products (matmul over all queries, or elementwise sums over the masked keys) are not: their
    kernels and blockings follow the query count and the key count (1,710 of 1,710 rows differed
    with matmul, 345 of 1,188 with sums). Needs no mask: batch 1, no padding, causal; a token
    tree's pass (playground.engine.tree) names its runs of rows and their keys in `tree_runs`.
    A run's first pass (prompt_pass, nothing cached before it) attends in one batch instead.
    The g query heads that share a key/value head are folded into one product's rows, as
    grouped_eager_attention does (query row [B, H, d] -> [B, KV, g, d]), rather than each key/value
    head copied g times (repeat_kv: the cache copied twice a layer and pass): SmolLM2 in float32 held to
    AVX2 (2-core AMD EPYC, one thread, interleaved medians) one token after 800 30.7 -> 28.4 ms, four
    38.9 -> 36.2; after 200, 29.1 -> 28.5 and 32.3 -> 31.3. Every row takes that product whatever the
    pass's width, so rows still agree. float32 rows come from row_attention's C kernel instead where it was built
    (each row alone in one fixed order as well; one call a run of rows and layer), else from these operations."""
    if opens_a_run(query, key, kwargs):
        return batched_causal_attention(module, query, key, value, scaling), None
    runs = kwargs.get("tree_runs") or [(0, query.shape[-2], key.shape[-2])]
    if row_attention.takes(query, key, value):  # float32: the same rows from a C kernel, one call a run
        out = query.new_empty(1, query.shape[2], query.shape[1], query.shape[3])  # [1, q, H, d]
        for start, end, keys in runs:
            row_attention.attend(query[:, :, start:end], gather_keys(key, keys), gather_keys(value, keys), scaling,
                                 out[:, start:end])
        return out, None
    b, heads, _, d = query.shape
    kv_heads = key.shape[1]
    rows = []
    for start, end, keys in runs:
        k, v = gather_keys(key, keys), gather_keys(value, keys)  # [B, KV, n, d]: the run's last row's keys
        for i in range(start, end):
            seen = k.shape[-2] - (end - 1 - i)  # the keys of every position up to this query's own
            grouped = query[:, :, i].reshape(b, kv_heads, heads // kv_heads, d)  # [B, KV, g, d]
            scores = torch.matmul(grouped, k[:, :, :seen].transpose(2, 3)) * scaling  # [B, KV, g, seen]
            weights = nn.functional.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
            rows.append(torch.matmul(weights, v[:, :, :seen]).reshape(b, 1, heads, -1))  # [B, 1, H, d]
    return (torch.cat(rows, dim=1) if len(rows) > 1 else rows[0]), None  # [B, q, H, d]


def opens_a_run(query, key, kwargs) -> bool:
    """Whether this pass is a run's first (prompt_pass), with no keys before its queries, no tree."""
    return PROMPT_PASS.get() and key.shape[-2] == query.shape[-2] and not kwargs.get("tree_runs")


def batched_causal_attention(module, query, key, value, scaling) -> torch.Tensor:
    """One causal product over a pass with no keys before it: query [B, H, q, d], key and value
    [B, KV, q, d] -> [B, q, H, d] (PyTorch's fused kernel: blocked, so no [q, q] scores are held)."""
    k = repeat_kv(key, module.num_key_value_groups)
    v = repeat_kv(value, module.num_key_value_groups)
    out = nn.functional.scaled_dot_product_attention(query, k, v, is_causal=True, scale=scaling)  # [B, H, q, d]
    return out.transpose(1, 2).contiguous()


def eager_or_tree_attention(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """transformers' eager attention (its grouped heads folded: grouped_eager_attention); a token
    tree's pass (`tree_runs`: tree_batches) run by run
    instead. A tree row's keys are not one contiguous run (its ancestors sit between other branches'
    nodes), so the masked eager product sums them in other groupings than a one-token pass does and
    rounds differently (greedy identity broke on SmolLM2 in bfloat16); gathered, each run of rows is a
    chain's verify pass over contiguous keys, whose rows are the one-token passes' (see above). The
    runs go through batched products, each padded at its end as a chain's rows are (tree_batches).
    A run's first pass (prompt_pass) goes through PyTorch's fused kernel: SmolLM2-135M in bf16 on 2
    cores (AVX512-BF16), a 500-token prompt's pass 0.68 s against 0.99 s eager."""
    if opens_a_run(query, key, kwargs):
        return batched_causal_attention(module, query, key, value, scaling), None
    parts = kwargs.pop("tree_runs", None)
    if parts is None:
        return grouped_eager_attention(query, key, value, attention_mask, scaling), None
    return torch.cat([part.attend(query, key, value, scaling) for part in parts], dim=1), None  # [1, q, H, d]


def grouped_eager_attention(query, key, value, mask, scaling) -> torch.Tensor:
    """transformers' eager attention (scores in the model's dtype plus the additive mask, softmax in
    float32, weights back in the model's dtype) with the g query heads that share a key/value head
    folded into the query axis, instead of each key/value head repeated g times (a copy of the cache
    every layer and pass: 7% of a SmolLM2 pass's samples, and 52.9-67.0 ms a one-token pass against
    50.6-56.9 folded, three alternated processes, 2-core Xeon):

        query [b, KV*g, n, d] -> [b, KV, g*n, d]   (head h = kv*g + j, as repeat_kv pairs them)
        mask  [b, 1, n, L]    -> the same n rows for each of the g heads
        out   [b, KV, g*n, d] -> [b, n, KV*g, d]

    Each row is the same dot products and sums as in eager's product, only in a product of other
    height, which these products' rows do not depend on (placement.eager_rows_invariant): SmolLM2's
    logits came out bitwise those of the eager attention."""
    b, heads, n, d = query.shape
    kv, keys = key.shape[1], key.shape[2]
    groups = heads // kv
    rows = groups * n
    scores = _product(query.reshape(b, kv, rows, d), key.transpose(2, 3)) * scaling  # [b, KV, g n, L]
    if mask is not None:
        scores = (scores.view(b, kv, groups, n, keys) + mask[:, :, None]).view(b, kv, rows, keys)
    weights = nn.functional.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    return _weighted_values(weights, value).view(b, heads, n, -1).transpose(1, 2).contiguous()


KEY_BLOCK = 1024  # keys summed per product of weights and values (rows agreed up to 1,024, not past it: below)


def _weighted_values(weights: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """weights [B, KV, m, L] @ value [B, KV, L, d], over the keys KEY_BLOCK at a time: each block's product
    in the model's dtype, the blocks added in float32 in order, rounded once more. A bfloat16 product over more
    than 1,024 keys sums them in an order that follows its row count (oneDNN, AVX512-BF16, 2-core AMD EPYC,
    torch 2.13: in a 16-row pass over 1,030 keys, rows that see at most 1,024 of them came out unlike a
    one-token pass's; greedy speculation under a schema left the target alone at token 20 of a 1,010-token
    prompt, JSONSchemaBench Github_hard o53038), one over at most 1,024 agrees row by row. A row's masked
    keys weigh exactly 0, so a block past them adds 0: a row over at most KEY_BLOCK keys is one product,
    in a pass of any width. Cost: 43 against 132 us for a one-token layer's product over 1,460 keys (one thread);
    none at or under 1,024 keys."""
    keys = weights.shape[-1]
    if value.dtype == torch.bfloat16 and amx_products():
        return _padded_blocks(weights, value)
    if keys <= KEY_BLOCK:
        return _product(weights, value)
    total = _product(weights[..., :KEY_BLOCK], value[:, :, :KEY_BLOCK]).float()
    for start in range(KEY_BLOCK, keys, KEY_BLOCK):
        total += _product(weights[..., start:start + KEY_BLOCK], value[:, :, start:start + KEY_BLOCK])
    return total.to(value.dtype)


AMX_BLOCK = 256  # keys per product where oneDNN multiplies with AMX (64 to 256 all kept the rows: eager_rows_agree)


@functools.lru_cache(maxsize=1)
def amx_products() -> bool:
    """Whether oneDNN's bfloat16 products here are AMX's (the CPU has it, no limit below it: cpu_isa)."""
    return amx_allowed()


def _padded_blocks(weights: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """weights [B, KV, m, L] @ value [B, KV, L, d] as products over exactly AMX_BLOCK keys each, the last
    padded with zero keys, added in float32 in order. oneDNN's AMX products sum a row's keys in an order that
    follows how many there are (a row over 40 keys and over 41, the last weighted 0, rounded apart: greedy
    SmolLM2 left the target alone at token 16), while rows of one key count agree whatever the row count
    (2-core Intel Xeon, torch 2.13). Here every product has AMX_BLOCK keys, a row's masked keys and the
    padding weigh exactly 0, and a block of them adds 0: a row comes out the same in a pass of any width.

        weights -> [B*KV, nb, m, AMX_BLOCK], value -> [B*KV, nb, AMX_BLOCK, d]  (the blocks a batch axis)
        -> [B*KV, nb, m, d], summed over nb in order -> [B, KV, m, d]"""
    b, kv, m, keys = weights.shape
    pad = -keys % AMX_BLOCK
    weights, value = nn.functional.pad(weights, (0, pad)), nn.functional.pad(value, (0, 0, 0, pad))
    blocks = (keys + pad) // AMX_BLOCK
    w = weights.reshape(b, kv, m, blocks, AMX_BLOCK).transpose(2, 3).reshape(b * kv, blocks, m, AMX_BLOCK)
    parts = _product(w, value.reshape(b * kv, blocks, AMX_BLOCK, -1)).float()
    total = parts[:, 0]
    for block in range(1, blocks):
        total = total + parts[:, block]
    return total.view(b, kv, m, -1).to(value.dtype)


PROBED = ((40, 4), (300, 8), (1030, 16), (1040, 32), (2050, 16), (300, 64))  # (keys, rows) of the passes eager_rows_agree
# tries (64: a wide tree's or a long forced run's pass; the others up to 32 left it unchecked, an identity review)


@functools.lru_cache(maxsize=1)
def eager_rows_agree() -> bool:
    """Whether, on this CPU, each row of a bfloat16 pass through grouped_eager_attention is bitwise the row of a
    one-token pass (SmolLM2's heads, random values, the passes in PROBED; about 0.15 s, once a process). The
    blocks of keys were measured on one CPU's oneDNN; another could sum a product's keys otherwise, and its
    bfloat16 models then attend row by row instead (placement.eager_rows_invariant)."""
    generator = torch.Generator().manual_seed(0)
    for keys, width in PROBED:
        q, k, v = (torch.randn(1, heads, n, 64, generator=generator).bfloat16()
                   for heads, n in ((9, width), (3, keys), (3, keys)))
        wide = grouped_eager_attention(q, k, v, causal_tail(width, keys, torch.bfloat16, torch.device("cpu")), 0.125)
        for row in range(width):
            seen = keys - width + row + 1
            one = grouped_eager_attention(q[:, :, row:row + 1], k[:, :, :seen], v[:, :, :seen], None, 0.125)
            if not torch.equal(one[0, 0], wide[0, row]):
                return False
    return True


ONEDNN_PAST = 16 ** 3  # ATen's checksize (its mkldnn_gemm_min_size, 16 * 16 * 16): a bfloat16 batched product of more
# multiply-adds (batch x rows x inner x columns) goes to oneDNN, a smaller one to ATen's own kernel, which rounds
# otherwise. A one-token pass over a few dozen keys of a small model fell under it, its verify pass over it: a
# fuzzer's tiny bfloat16 pair left the target alone at token 42 (its rows one bfloat16 step apart from 8 rows on)


def _product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a [B, KV, m, i] @ b [B, KV, i, j] -> [B, KV, m, j], taken by oneDNN whatever m: a product too small
    for it gets zero rows after its own (dropped again), as many as it takes, so that a pass's width
    never moves a row from one kernel to the other (oneDNN's rows agreed in every product of 8 to 78 rows
    tried on the fuzzer's captured case)."""
    batch, m, inner, cols = a.shape[0] * a.shape[1], a.shape[2], a.shape[3], b.shape[3]
    need = ONEDNN_PAST // (batch * inner * cols) + 1
    if a.dtype != torch.bfloat16 or m >= need:
        return torch.matmul(a, b)
    padded = torch.cat([a, a.new_zeros(*a.shape[:2], need - m, inner)], dim=2)
    return torch.matmul(padded, b)[:, :, :m].contiguous()


KEY_SLOTS = 16384  # keys gathered per batched product at most (runs x keys): bounds its memory on long contexts


def tree_batches(runs, dtype: torch.dtype, device) -> list:
    """A tree pass's runs (runner.tree_runs) -> BranchBatches of consecutive runs, at most KEY_SLOTS
    keys each. A first run more than twice as wide as every other (many pending or forced tokens
    before the tree) goes alone, as a FirstRun, so the others are not padded to its width."""
    parts, rest = [], runs
    widest_other = max((end - start for start, end, _ in runs[1:]), default=0)
    first = runs[0]
    if isinstance(first[2], int) and first[1] - first[0] > 2 * widest_other:
        parts, rest = [FirstRun(*first)], runs[1:]
    n = max((keys if isinstance(keys, int) else len(keys) for _, _, keys in rest), default=1)
    size = max(1, KEY_SLOTS // n)
    while rest:
        parts.append(BranchBatch.of(rest[:size], dtype, device))
        rest = rest[size:]
    return parts


@dataclass(frozen=True, slots=True)
class FirstRun:
    """Rows [start, end) attending as a chain over the first `keys` keys (no copy)."""
    start: int
    end: int
    keys: int

    def attend(self, query, key, value, scaling) -> torch.Tensor:
        mask = causal_tail(self.end - self.start, self.keys, query.dtype, query.device)
        k, v = key[:, :, : self.keys], value[:, :, : self.keys]
        return grouped_eager_attention(query[:, :, self.start:self.end], k, v, mask, scaling)


@dataclass(frozen=True, slots=True)
class BranchBatch:
    """Runs of a tree pass (runner.tree_runs) as one batch of chains, built once a pass. Run b's rows
    fill row slots [b, :w_b] of a [runs, width] grid, its keys key slots [b, :n_b] of a [runs, n] grid;
    the rest is padding (the run's last row and last key again), masked after the run's own keys,
    where a chain's rows have their future keys: each real row sums what a one-token pass sums."""
    rows: torch.Tensor  # [runs * width]: the pass row in each row slot
    keys: torch.Tensor  # [runs * n]: the key position in each key slot
    mask: torch.Tensor  # [runs, 1, width, n] additive: a real row sees its run's keys up to its own
    out: torch.Tensor  # [q]: each pass row's slot, flattened

    @staticmethod
    def of(runs, dtype: torch.dtype, device) -> "BranchBatch":
        width = max(end - start for start, end, _ in runs)
        seen = [torch.arange(keys) if isinstance(keys, int) else keys.cpu() for _, _, keys in runs]
        n = max(len(keys) for keys in seen)
        mask = torch.zeros(len(runs), 1, width, n, dtype=dtype)
        rows, out = [], []
        for b, ((start, end, _), keys) in enumerate(zip(runs, seen)):
            w = end - start
            rows.append(torch.arange(start, start + width).clamp(max=end - 1))
            out.extend(range(b * width, b * width + w))
            mask[b, 0, :w, : len(keys)] = causal_tail(w, len(keys), dtype, torch.device("cpu"))[0, 0]
            mask[b, 0, :, len(keys):] = torch.finfo(dtype).min
        keys = torch.cat([torch.cat([k, k[-1:].expand(n - len(k))]) for k in seen])
        return BranchBatch(torch.cat(rows).to(device), keys.to(device), mask.to(device), torch.tensor(out, device=device))

    def attend(self, query, key, value, scaling) -> torch.Tensor:
        """-> [1, rows, H, d]: this batch's rows, in pass order."""
        q = self.grid(query[0], self.rows)  # [runs, H, width, d]
        k, v = self.grid(key[0], self.keys), self.grid(value[0], self.keys)  # [runs, KV, n, d]
        out = grouped_eager_attention(q, k, v, self.mask, scaling)  # [runs, width, H, d]
        return out.flatten(0, 1).index_select(0, self.out)[None]

    def grid(self, states: torch.Tensor, slots: torch.Tensor) -> torch.Tensor:
        """states [heads, length, d] -> [runs, heads, slots per run, d]: the picked rows, run by run."""
        picked = states.index_select(1, slots).unflatten(1, (self.mask.shape[0], -1))  # [heads, runs, per run, d]
        return picked.transpose(0, 1)


def gather_keys(key: torch.Tensor, keys) -> torch.Tensor:
    """key [B, KV, kv, d] -> the run's keys: the first `keys` (an int: a view), or those indexed."""
    return key[:, :, :keys] if isinstance(keys, int) else key.index_select(2, keys)


@functools.lru_cache(maxsize=64)
def causal_tail(width: int, n: int, dtype, device) -> torch.Tensor:
    """The additive mask [1, 1, width, n] of a chain's last `width` rows over n keys (a very negative
    number on each row's future keys), as transformers builds it for eager attention. Kept: every
    layer of a pass asks for the same ones (read only)."""
    future = torch.ones(width, width, dtype=torch.bool, device=device).triu(1)
    mask = torch.zeros(width, n, dtype=dtype, device=device)
    mask[:, n - width:].masked_fill_(future, torch.finfo(dtype).min)
    return mask[None, None]


AttentionInterface.register(ROW_INVARIANT, row_invariant_attention)
AttentionInterface.register(ATTENTION, eager_or_tree_attention)
for name in (ROW_INVARIANT, ATTENTION):
    AttentionMaskInterface.register(name, ALL_MASK_ATTENTION_FUNCTIONS["eager"])  # an additive causal mask


def two_row_linear(self: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """nn.Linear.forward, with a single input row computed as the first of two equal rows (from the
    packed weight where playground.models.packed_linear gave the module one)."""
    packed = self.__dict__.get(ATTR)
    if x.numel() != x.shape[-1]:
        return linear(x, self.weight, self.bias, packed)
    rows = x.reshape(1, -1).expand(2, -1).contiguous()  # [2, in]
    return linear(rows, self.weight, self.bias, packed)[:1].reshape(*x.shape[:-1], -1)


def row_kernel_serves(weight: torch.Tensor, in_halves: bool) -> bool:
    """Whether a linear layer's products go through row_products' kernel: float32 on a CPU where it was built, or held
    in bfloat16 already in a float32 model loaded in halves (in_halves: playground.models.halves)."""
    held = weight.dtype == torch.bfloat16 and in_halves
    return (weight.dtype == torch.float32 or held) and weight.device.type == "cpu" and row_products.kernel() is not None


def at_most_widest(forward, module: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """forward(module, x), x [..., in], with its rows taken WIDEST at a time past a run's first pass (prompt_pass):
    the products agree row by row up to WIDEST rows, not past 32 (bfloat16 with AMX, 2-core Xeon, torch 2.13: every
    row of a 33-row product differed from a narrower one's, so greedy trees of 33 or more nodes, 8,7, left the
    target alone at token 27). A run's first pass needs to agree only with itself (prompt_pass) and goes whole."""
    rows = x.numel() // x.shape[-1]
    if rows <= WIDEST or PROMPT_PASS.get():
        return forward(module, x)
    parts = [forward(module, part) for part in x.reshape(rows, -1).split(WIDEST)]  # [<= WIDEST, in] each
    return torch.cat(parts).reshape(*x.shape[:-1], -1)


def make_batch_invariant(model: torch.nn.Module) -> torch.nn.Module:
    """Patch every nn.Linear of a model loaded with attn_implementation=ATTENTION (in place): float32 ones through
    row_products' kernel where it was built (row_kernel_serves), the others' one row computed as two, except where the
    packed weights' one-row product is already bitwise a row of the wider ones on this machine (one_row_is_a_row:
    oneDNN's float32 kernels held to AVX2, 10% less time a one-token pass than two rows). What exactness costs is
    timed once the model's decode threads are known (time_plain_ratio)."""
    attention = getattr(model.config, "_attn_implementation", None)
    if attention not in (ATTENTION, ROW_INVARIANT):
        raise ValueError(f"load the model with attn_implementation='{ATTENTION}' or '{ROW_INVARIANT}' (it has {attention})")
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    rest = [m for m in linears if not row_kernel_serves(m.weight, getattr(model, LOADED_IN_HALVES, False))]
    exact_alone = {shape: one_row_is_a_row(module) for shape, module in _by_shape(rest).items()}
    for module in linears:
        if module not in rest:  # every pass, a run's first too (MKL's rows there differed on one
            module.forward = functools.partial(row_products.module_forward, module)  # thread and on two, and
            # another run's decode_threads can change the count under it); its weight held in bfloat16 where exact
            row_products.hold_halved(module)
        else:
            one_row = packed_forward if exact_alone[_shape(module)] else two_row_linear
            module.forward = functools.partial(at_most_widest, one_row, module)
    if attention == ROW_INVARIANT:  # float32 layers whose products all go through the kernel: two C calls a layer
        row_layers.install(model)
    model.playground_batch_invariant = True
    return model


@contextlib.contextmanager
def plain_kernels(model):
    """Within: a batch-invariant model's products and attention as transformers runs them (one-row products
    MKL's, attention SDPA's), whose tokens can differ: the baseline of plain decoding (bench's transformers rows
    ran the exact model, and read 1.00x its target alone where plain generate ran 1.33x faster; an AVX2 review).
    Not for a model other runs share at the time."""
    if not getattr(model, "playground_batch_invariant", False):
        yield
        return
    patched = [m for m in model.modules() if "forward" in m.__dict__
               and (isinstance(m, torch.nn.Linear) or not row_layers.uninstalled(m))]  # (linear and decoder layers)
    forwards, attention = [m.__dict__["forward"] for m in patched], model.config._attn_implementation
    with row_products.float32_weights(patched):  # (transformers would hold them in float32)
        try:
            for module in patched:
                del module.__dict__["forward"]
            model.set_attn_implementation("sdpa")
            yield
        finally:
            model.set_attn_implementation(attention)
            for module, forward in zip(patched, forwards):
                module.forward = forward


WIDEST = 16  # rows per product at most past a run's first pass (at_most_widest), the widths the check compares


def _shape(module: torch.nn.Linear) -> tuple:
    return tuple(module.weight.shape), module.weight.dtype, module.__dict__.get(ATTR) is not None, module.bias is not None


def _by_shape(linears: list) -> dict:
    """One module of each (weight shape, dtype, packed, bias) the model has: the products a check tells apart."""
    return {shape: module for module in linears for shape in [_shape(module)]}


def one_row_is_a_row(module: torch.nn.Linear) -> bool:
    """Whether a packed product of one row is bitwise that row of the products of 2 to WIDEST rows, every row of each,
    on one thread and on all, for the module's weight shape and dtype (the kernel's order of sums is its choice, by
    shape, instruction set and a row's place in its block of rows; values spread over many binades that agree mean
    the same order: _spread). Unpacked weights: no (MKL's small products are not row-invariant)."""
    if module.__dict__.get(ATTR) is None:
        return False
    generator = torch.Generator().manual_seed(0)
    probe = torch.nn.utils.skip_init(torch.nn.Linear, module.in_features, module.out_features,
                                     bias=module.bias is not None, dtype=module.weight.dtype)
    probe.weight = torch.nn.Parameter(_spread((module.out_features, module.in_features), generator, module.weight.dtype),
                                      requires_grad=False)
    if module.bias is not None:  # (oneDNN adds it inside the product: Qwen2's q/k/v)
        probe.bias = torch.nn.Parameter(_spread((module.out_features,), generator, module.weight.dtype), requires_grad=False)
    probe.__dict__[ATTR] = pack(probe.weight)
    rows = _spread((WIDEST, module.in_features), generator, module.weight.dtype)
    threads = torch.get_num_threads()
    try:
        with torch.inference_mode():
            for count in sorted({1, threads}):
                torch.set_num_threads(count)
                ones = torch.cat([packed_forward(probe, rows[i:i + 1]) for i in range(WIDEST)])  # [WIDEST, out]
                if not all(torch.equal(ones[:n], packed_forward(probe, rows[:n])) for n in range(2, WIDEST + 1)):
                    return False
    finally:
        torch.set_num_threads(threads)
    return True


def _spread(shape: tuple, generator: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    """Random values spread over many binades (a Gaussian times e to twice a Gaussian): sums taken in another order
    round otherwise even after bfloat16's rounding. Gaussian ones may hide it: with AVX512-BF16 (a 2-core AMD EPYC,
    torch 2.13) the one-row bfloat16 product over 1,536 inputs sums otherwise than wider ones (87 of 90 widths of
    spread values showed it), and the check with Gaussian rows passed on SmolLM2's down_proj weight."""
    return (torch.randn(shape, generator=generator) * torch.exp(2 * torch.randn(shape, generator=generator))).to(dtype)


TIMINGS = 5  # interleaved timings of each way, after one to warm up
PLAIN_BUDGET_S = 0.5  # time_plain_ratio's turns stop past this, after three of each
PLAIN_COPIES = 1 << 30  # bytes: time_plain_ratio's float32 copies of weights held in bfloat16, at most


def time_plain_ratio(model: torch.nn.Module, threads: int | None, up_to: int = TIMED_UP_TO) -> None:
    """model.playground_plain_ratio: the median time of a one-token pass's products as these passes take them (every
    linear layer on one row) over that of plain ones (F.linear on float32 weights, as transformers holds them: MKL's in
    float32), on the thread count the model decodes with (threads; None: all), timed in turns here: how much faster a
    one-token pass's products would run with no regard for exactness. Every layer, on the decode threads: one decoder
    layer's products alone (its weights then in cache) read MKL 1.1x faster than the kernel where a whole pass's read it
    1.4x slower, and at the load's two threads rather than the decode's one 1.62-1.75x faster, which the note beside the
    speedup said (SmolLM2 in float32 held to AVX2, a 2-core AMD EPYC: whole plain passes were 1.37x slower than exact
    ones). Weights held in bfloat16 (row_products.hold_halved) are timed plain from float32 copies, the layers in
    order up to PLAIN_COPIES bytes of them (far past any CPU cache; SmolLM2's are 0.5 GB). None (no note) for a model
    past `up_to` parameters, as decode_threads: eight passes over its weights or more."""
    if parameters(model) > up_to:
        model.playground_plain_ratio = None
        return
    exact, plain, copied = [], [], 0
    for module, x in one_row_calls(model.modules(), model.dtype):  # (module, one row [1, in])
        weight = module.weight
        if weight.dtype != x.dtype:
            copied += weight.numel() * x.element_size()
            if copied > PLAIN_COPIES and exact:
                break
            weight = weight.to(x.dtype)
        exact.append((module, x))
        plain.append((x, weight, module.bias))
    with on_threads(threads), torch.inference_mode():
        medians = medians_in_turns({"exact": functools.partial(seconds_of, lambda m, x: m(x), exact),
                                    "plain": functools.partial(seconds_of, torch.nn.functional.linear, plain)},
                                   TIMINGS, PLAIN_BUDGET_S)
    model.playground_plain_ratio = medians["exact"] / medians["plain"] if exact else None
