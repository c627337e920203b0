"""Attention of a few query rows over a long static cache in two Triton kernels that read only the
cache positions some row may attend (flash-decoding: the cache split in chunks, one program per
(batch, key/value head, chunk), then one program per (batch, key/value head) combining the chunks).

The folded attention (playground.engine.attention) otherwise runs as two matrix products over the
cache's whole capacity behind a mask: 4,096 positions (or up to 32,768) read and multiplied every
pass however short the context, in three kernels (q k^T, softmax, p v). Here a chunk's blocks whose
mask rows are all False read no key or value, so a pass reads what its context holds (those blocks'
products still run, on zeros).

    query [b, Hkv, R, d]   R = g * n folded rows: row r is query head kv * g + r // n, token r % n
    key, value [b, Hkv, L, d]
    mask [b, 1, n, L] bool (True: attends), the n tokens' rows, shared by the g heads
    -> out [b, Hkv, R, d] in value's dtype

A masked score is -1e30 (finite: a row with nothing allowed yet keeps exp(m - m_new) defined); a
row with nothing allowed at all gets zeros (the matrix products give the mean of the values there;
no row of a real pass is such a row: each token attends at least itself).
Per chunk, the online softmax in float32 (m: running row maximum, l: running sum of exp(s - m),
acc: running sum of exp(s - m) v); the combine rescales each chunk by exp(m_chunk - max m). Scores
q k^T stay in float32 (the matrix-product attention rounds them to the model's dtype first), and p
is rounded to the value's dtype before p v, as there. Opt-in: PLAYGROUND_GQA_ATTENTION=triton
(scripts/gpu_check.py times it against the matrix products, CHUNK at three sizes). On an H200
(2026-12-04, a chunk's blocks unrolled, the combine's maximum and sum from one load) it was faster
alone, over all layers at 4,096 positions with 256 written (a 7B one-token pass 0.32 against 0.70
ms, the 0.5B draft step 0.25 against 0.58, chunks of 128 fastest: CHUNK since), and in a compiled round its split
took 5.9 us a layer and its combine 6.6: the combine stepped through all 32 chunks, each waiting for
its statistics before reading its partial. Now the split writes every partial (zeros where a row
attended nothing), and the combine finds the last chunk any row attends from its one load of the
statistics and reads only up to it, each chunk's loads masked by that alone (BENCHMARKS.md "GPU";
not yet timed on a GPU). ONE_KERNEL (not yet timed either; off): no combine kernel; each split
program counts itself in on its head's counter once its partial is written, and the head's last to
arrive combines (one launch and one wait between kernels less a layer, for a zero fill of the call's
own counters, one int32 a (batch, head): counters shared by calls were raced by calls in flight at
once on other streams)."""
import functools
import os

import torch

from playground.engine.dependent_launch import kernel_options

CHUNK = 128  # cache positions a program covers (on an H200 faster than 64, 256 or 512 in all three passes timed)
BLOCK_N = 64  # positions per step inside a program
MAX_ROWS = 64  # folded rows one program holds (a 7B verify pass of 5 tokens: 35); more go to the matmuls


def usable(query: torch.Tensor, value: torch.Tensor, mask: torch.Tensor) -> bool:
    """Whether these tensors can take the kernels: bool mask, half precision, few rows, values as
    wide as queries, on a GPU (or on a CPU under Triton's interpreter, TRITON_INTERPRET=1: how the
    tests run them)."""
    runs_here = query.device.type == "cuda" or os.environ.get("TRITON_INTERPRET") == "1"
    return (runs_here and query.dtype in (torch.bfloat16, torch.float16) and mask.dtype == torch.bool
            and query.shape[2] <= MAX_ROWS and value.shape[-1] == query.shape[-1])


def _pow2(x: int, least: int = 16) -> int:
    return max(least, 1 << (x - 1).bit_length())


@functools.cache
def _kernels():
    """The two kernels, made on first use (TRITON_INTERPRET=1 set before then runs them on a CPU)."""
    import triton
    import triton.language as tl

    @triton.jit
    def combine_head(O, STATS, OUT, bh, so_b, so_h, so_r, heads, ROWS: tl.constexpr, D: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr, CHUNKS: tl.constexpr, BLOCK_C: tl.constexpr):
        """One (batch, key/value head)'s chunks combined into its rows of OUT. Loads bypass the
        multiprocessor's L1 (".cg") where they can: in one kernel, other programs wrote the partials (the
        pipelined 4-byte ones cannot; the arrival's acquire invalidates L1 first, CCTL.IVALL in its SASS)."""
        b, h = bh // heads, bh % heads
        rows, dims = tl.arange(0, BLOCK_M), tl.arange(0, BLOCK_D)
        chunk = tl.arange(0, BLOCK_C)
        at = (bh * CHUNKS + chunk)[:, None] * 2 * BLOCK_M + rows[None, :]  # [BLOCK_C, BLOCK_M]
        c_ok = (chunk < CHUNKS)[:, None]
        m_c = tl.load(STATS + at, mask=c_ok, other=-1.0e30, cache_modifier=".cg")  # the maximum and sum over all
        l_c = tl.load(STATS + at + BLOCK_M, mask=c_ok, other=0.0, cache_modifier=".cg")  # chunks: one load each
        top = tl.max(m_c, 0)  # [BLOCK_M]                 (l: 0 where the row attended nothing there)
        den = tl.sum(tl.exp(m_c - top[None, :]) * l_c, 0)
        last = tl.max(tl.where(tl.max(l_c, 1) > 0, chunk, -1), 0)  # the last chunk some row attends
        num = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
        for c in tl.range(0, CHUNKS, num_stages=4):  # (a constant bound: Triton 3.6's interpreter failed on a
            # runtime one.) Pipelined: four chunks' loads in flight at once (a plain loop waited a whole trip to
            # memory a chunk: tests/test_triton_sm90.py). Past `last` both loads are masked off: nothing read
            part = bh * CHUNKS + c
            on = rows * 0 + c <= last
            w = tl.exp(tl.load(STATS + part * 2 * BLOCK_M + rows, mask=on, other=-1.0e30, cache_modifier=".cg") - top)
            num += w[:, None] * tl.load(O + part * BLOCK_M * BLOCK_D + rows[:, None] * BLOCK_D + dims[None, :],
                                        mask=on[:, None], other=0.0, cache_modifier=".cg")  # (w: 0 or a row's;
            # the partial: zeros where it attended nothing)
        ok = (rows < ROWS)[:, None] & (dims < D)[None, :]
        out = num / tl.where(den > 0, den, 1.0)[:, None]
        tl.store(OUT + b * so_b + h * so_h + rows[:, None] * so_r + dims[None, :], out.to(OUT.dtype.element_ty), mask=ok)

    globals()["combine_head"] = combine_head  # (a kernel finds the functions it calls among its module's globals)

    @triton.jit
    def split(Q, K, V, MASK, O, STATS, OUT, COUNT, sq_b, sq_h, sq_r, sk_b, sk_h, sk_l, sv_b, sv_h, sv_l, sm_b, sm_n,
              sm_l, so_b, so_h, so_r, heads, n, length, scale, ROWS: tl.constexpr, D: tl.constexpr,
              BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr, CHUNK: tl.constexpr, BLOCK_N: tl.constexpr,
              CHUNKS: tl.constexpr, BLOCK_C: tl.constexpr, ONE_KERNEL: tl.constexpr, PDL: tl.constexpr):
        if PDL:  # launched dependent: the kernel before (the cache's write) has ended (dependent_launch)
            tl.extra.cuda.gdc_wait()
        bh, chunk, chunks = tl.program_id(0), tl.program_id(1), tl.num_programs(1)
        b, h = bh // heads, bh % heads
        rows, dims = tl.arange(0, BLOCK_M), tl.arange(0, BLOCK_D)
        row_ok, dim_ok = rows < ROWS, dims < D
        q = tl.load(Q + b * sq_b + h * sq_h + rows[:, None] * sq_r + dims[None, :],
                    mask=row_ok[:, None] & dim_ok[None, :], other=0.0)
        token = rows % n
        m_i = tl.full([BLOCK_M], -1.0e30, tl.float32)
        l_i = tl.zeros([BLOCK_M], tl.float32)
        acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
        for j in tl.static_range(CHUNK // BLOCK_N):  # unrolled, no branch: every block's loads issue together
            cols = chunk * CHUNK + j * BLOCK_N + tl.arange(0, BLOCK_N)
            col_ok = cols < length
            allowed = tl.load(MASK + b * sm_b + token[:, None] * sm_n + cols[None, :] * sm_l,
                              mask=row_ok[:, None] & col_ok[None, :], other=0) != 0  # [BLOCK_M, BLOCK_N]
            hits = tl.max(tl.max(allowed.to(tl.int32), 1), 0)  # no row attends here: nothing read
            read = col_ok & (tl.full([BLOCK_N], 0, tl.int32) + hits > 0)  # broadcast first: the interpreter
            # refused a mask made with a scalar ("mask has unsupported dtype")
            k = tl.load(K + b * sk_b + h * sk_h + cols[:, None] * sk_l + dims[None, :],
                        mask=read[:, None] & dim_ok[None, :], other=0.0)  # [BLOCK_N, BLOCK_D]
            v = tl.load(V + b * sv_b + h * sv_h + cols[:, None] * sv_l + dims[None, :],
                        mask=read[:, None] & dim_ok[None, :], other=0.0)  # loaded beside k, not after q k^T
            scores = tl.where(allowed, tl.dot(q, tl.trans(k)) * scale, -1.0e30)  # [BLOCK_M, BLOCK_N], fp32
            m_new = tl.maximum(m_i, tl.max(scores, 1))
            alpha = tl.exp(m_i - m_new)  # 1 where the block allowed nothing: it changes no sum
            p = tl.where(allowed, tl.exp(scores - m_new[:, None]), 0.0)
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
            m_i = m_new
        if PDL:  # the next kernel may be placed now (it waits for this one's end before it reads)
            tl.extra.cuda.gdc_launch_dependents()
        part = bh * chunks + chunk
        tl.store(O + part * BLOCK_M * BLOCK_D + rows[:, None] * BLOCK_D + dims[None, :], acc)  # zeros for a
        # row that attended nothing here (p was 0 in every block): the combine reads it without asking
        tl.store(STATS + part * 2 * BLOCK_M + rows, m_i)
        tl.store(STATS + part * 2 * BLOCK_M + BLOCK_M + rows, l_i)
        if ONE_KERNEL:  # the head's last program to finish combines: every thread's stores made, then one
            tl.debug_barrier()  # release of them at the GPU's scope as it counts itself in
            if tl.atomic_add(COUNT + bh, 1, sem="acq_rel", scope="gpu") == CHUNKS - 1:
                combine_head(O, STATS, OUT, bh, so_b, so_h, so_r, heads, ROWS, D, BLOCK_M, BLOCK_D, CHUNKS, BLOCK_C)

    @triton.jit
    def combine(O, STATS, OUT, so_b, so_h, so_r, heads, ROWS: tl.constexpr, D: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr, CHUNKS: tl.constexpr, BLOCK_C: tl.constexpr,
                PDL: tl.constexpr):
        if PDL:  # (as the split; it lets the next kernel in as it starts: its loads are few)
            tl.extra.cuda.gdc_wait()
            tl.extra.cuda.gdc_launch_dependents()
        combine_head(O, STATS, OUT, tl.program_id(0), so_b, so_h, so_r, heads, ROWS, D, BLOCK_M, BLOCK_D, CHUNKS, BLOCK_C)

    return split, combine


def decode_attention_impl(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor,
                          scale: float, chunk: int | None = None, one_kernel: bool | None = None) -> torch.Tensor:
    """The kernels on these tensors (shapes above); `chunk`: positions a program covers (CHUNK);
    `one_kernel`: the combine done by each head's last split program (ONE_KERNEL)."""
    split, combine = _kernels()
    chunk = chunk or CHUNK
    if chunk < 16 or chunk & (chunk - 1):  # whole blocks of a power of two, each at least tl.dot's 16
        raise ValueError(f"a chunk of {chunk} positions: a power of two from 16 is needed")
    b, heads, rows, d = query.shape
    n, length = mask.shape[2], key.shape[2]
    query, key, value = (t if t.stride(-1) == 1 else t.contiguous() for t in (query, key, value))
    mask = mask.view(torch.uint8)  # same bytes; Triton reads it as integers
    block_m, block_d, chunks = _pow2(rows), _pow2(d), -(-length // chunk)
    partial = torch.empty(b * heads * chunks * block_m * block_d, device=query.device, dtype=torch.float32)
    stats = torch.empty(b * heads * chunks * 2 * block_m, device=query.device, dtype=torch.float32)
    out = torch.empty(b, heads, rows, value.shape[-1], device=query.device, dtype=value.dtype)
    one_kernel = ONE_KERNEL if one_kernel is None else one_kernel  # (its arrival counters: this call's own)
    count = torch.zeros(b * heads, device=query.device, dtype=torch.int32) if one_kernel else None
    sizes = dict(ROWS=rows, D=d, BLOCK_M=block_m, BLOCK_D=block_d, CHUNKS=chunks, BLOCK_C=_pow2(chunks, 1),
                 **kernel_options(query.device))
    split[(b * heads, chunks)](
        query, key, value, mask, partial, stats, out, count if count is not None else stats,
        query.stride(0), query.stride(1), query.stride(2), key.stride(0), key.stride(1), key.stride(2),
        value.stride(0), value.stride(1), value.stride(2), mask.stride(0), mask.stride(2), mask.stride(3),
        out.stride(0), out.stride(1), out.stride(2), heads, n, length, scale,
        CHUNK=chunk, BLOCK_N=min(BLOCK_N, chunk), ONE_KERNEL=count is not None, **sizes)
    if count is None:
        combine[(b * heads,)](partial, stats, out, out.stride(0), out.stride(1), out.stride(2), heads, **sizes)
    return out


ONE_KERNEL = False  # not yet timed on a GPU beside the two kernels (gpu_check's attention costs: "one kernel")


@torch.library.custom_op("playground::decode_attention", mutates_args=())
def decode_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor,
                     scale: float) -> torch.Tensor:
    """One op for torch.compile (it calls the kernels as they are, no tracing into Triton)."""
    return decode_attention_impl(query, key, value, mask, scale)


@decode_attention.register_fake
def _(query, key, value, mask, scale):
    return query.new_empty(*query.shape[:3], value.shape[-1], dtype=value.dtype)
