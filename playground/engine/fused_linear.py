"""A matrix product of a few rows with what surrounds it in a decoder layer fused in, as one Triton
kernel: a candidate for the draft's step, which on a GPU is bound by how many kernels it launches.

On an H200 (2026-12-04, BENCHMARKS.md "GPU") a Qwen2.5-0.5B-shaped draft step was 24 layers of
about 15 kernels, 49 us a layer: the four products took 22 us, the norms, the SiLU, the residual
adds, the rotary embedding, the cache write and the gaps between them most of the rest. Here the
layer's MLP half is two kernels (norm + gate/up, then SiLU-and-multiply + down + residual) and its
attention output one (o + residual):

    out = prologue(x) @ W^T (+ bias) (+ residual)      x [M, K'], W [N, K], out [M, N], M <= 16 rows
    prologue  none:  x                                  (K' = K)
              norm:  rmsnorm(x) * g                     (transformers' RMSNorm: the row's mean square in
                                                         float32, rounded to x's dtype before * g; K' = K)
              gated: silu(x[:, :K]) * x[:, K:]           (the joined gate/up product's output; K' = 2K)

Each program computes BLOCK_N outputs of every row over all of K (with `norm`, first each row's
mean square over K: x is a few kilobytes, read again from cache), through tl.dot on rows padded to
16; or, for a pass of at most `Blocks.narrow_rows` rows (a draft's step is one or two), as products
summed along K without tl.dot, whose 16 outputs a program at least left a 0.5B draft's o and down
products (N=896) 56 programs for an H200's 132 multiprocessors. Products accumulate in float32;
each step rounds where transformers' modules round (the SiLU's output, the normed row, the
product before the residual), so results differ from them only in the order of the float32 sums
and the SiLU's exp. The draft's numbers decide only what it guesses, never what is kept.

playground.engine.fused_layers runs decoder layers through it (opt-in, PLAYGROUND_FUSED_LAYERS);
scripts/gpu_check.py times it against the compiled products on a GPU (`--only fused`); tests run it
under Triton's interpreter on a CPU. Under PLAYGROUND_PDL it launches programmatically dependent
(playground.engine.dependent_launch), each program first asking L2 for its slice of the weight
where the weight fits (dependent_launch.prefetches): no kernel before writes it, so it may stream
in while that one ends."""
import dataclasses
import functools
import os

import torch

from playground.engine import dependent_launch

MAX_ROWS = 16


@dataclasses.dataclass(frozen=True)
class Blocks:
    """How the kernel splits a product.
    block_k: inputs a program reads per step (through tl.dot at most DOT_BLOCK_K);
    stages: steps whose loads are in flight at once (a product this small is bound by the bytes in
        flight per multiprocessor): each loop over K is pipelined to that depth, the norm's too
        (Triton 3.9 pipelined only the loads feeding tl.dot by itself, so each step of the others
        waited a whole trip to memory: tests/test_triton_sm90.py);
    programs: about how many programs N is split into where it allows;
    narrow_rows: passes of at most this many rows sum their products without tl.dot, in programs
        of 1 to 16 outputs (0: never).
    scripts/gpu_check.py --only fused times several against the compiled modules."""
    block_k: int = 128
    stages: int = 3
    programs: int = 128
    narrow_rows: int = 0


DOT_BLOCK_K = 256  # tl.dot's steps at most (a 16 x 64 x 512 step used 255 registers and spilled on sm90)
BLOCKS = Blocks()  # what a call without its own takes (gpu_check's `fusedlayers` sets the fastest timed)
PROLOGUES = {"none": 0, "norm": 1, "gated": 2}
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"  # (read once: a compiled pass asks `usable` too)


def usable(x: torch.Tensor, weight: torch.Tensor) -> bool:
    """Whether these can take the kernel: a few rows, half precision, on a GPU (or under Triton's
    interpreter, TRITON_INTERPRET=1 in the process's environment, as the tests run it)."""
    runs_here = x.device.type == "cuda" or INTERPRETED
    rows = x.numel() // x.shape[-1]
    return runs_here and x.dtype == weight.dtype in (torch.bfloat16, torch.float16) and rows <= MAX_ROWS


@functools.cache
def _kernel():
    """Made on first use (TRITON_INTERPRET=1 set before then runs it on a CPU)."""
    import triton
    import triton.language as tl

    @triton.jit
    def product(X, W, B, G, R, OUT, M, N, K, sx, sw, sr, so, eps, PROLOGUE: tl.constexpr, HAS_BIAS: tl.constexpr,
                HAS_RESIDUAL: tl.constexpr, DOT: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                BLOCK_K: tl.constexpr, STAGES: tl.constexpr, PDL: tl.constexpr, PREFETCH: tl.constexpr):
        rows = tl.arange(0, BLOCK_M)
        cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
        row_ok, col_ok = rows < M, cols < N
        if PREFETCH:  # this program's weights toward L2 while the kernel before ends (they depend on none)
            for k0 in range(0, K, 32 * 64):  # [BLOCK_N, 32] lines of 128 bytes (64 half-precision inputs) a step
                ks = k0 + tl.arange(0, 32) * 64
                lines = tl.where(col_ok[:, None] & (ks < K)[None, :], W + cols[:, None] * sw + ks[None, :], W)
                tl.inline_asm_elementwise("prefetch.global.L2 [$1]; // $0", "=r,l", [lines], dtype=tl.int32,
                                          is_pure=False, pack=1)
        if PDL:  # launched dependent: the kernel before has ended, its writes visible (dependent_launch)
            tl.extra.cuda.gdc_wait()
        if PROLOGUE == 1:  # each row's 1 / sqrt(mean square + eps), float32
            squares = tl.zeros([BLOCK_M], tl.float32)
            for k0 in tl.range(0, K, BLOCK_K, num_stages=STAGES):  # (pipelined: see Blocks)
                ks = k0 + tl.arange(0, BLOCK_K)
                x = tl.load(X + rows[:, None] * sx + ks[None, :], mask=row_ok[:, None] & (ks < K)[None, :], other=0.0)
                squares += tl.sum(x.to(tl.float32) * x.to(tl.float32), 1)
            inverse = tl.rsqrt(squares / K + eps)
        acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
        for k0 in tl.range(0, K, BLOCK_K, num_stages=STAGES):  # (pipelined: see Blocks)
            ks = k0 + tl.arange(0, BLOCK_K)
            k_ok = ks < K
            at = X + rows[:, None] * sx + ks[None, :]
            x_ok = row_ok[:, None] & k_ok[None, :]
            w = tl.load(W + cols[:, None] * sw + ks[None, :], mask=col_ok[:, None] & k_ok[None, :], other=0.0)
            if PROLOGUE == 2:  # silu(gate) rounded to the dtype, times up rounded: as act_fn(gate) * up
                gate = tl.load(at, mask=x_ok, other=0.0).to(tl.float32)
                up = tl.load(at + K, mask=x_ok, other=0.0)
                a = (gate / (1.0 + tl.exp(-gate))).to(up.dtype) * up  # (torch's silu: x / (1 + e^-x))
            elif PROLOGUE == 1:  # the normed row rounded to the dtype, times the norm's weight
                g = tl.load(G + ks, mask=k_ok, other=0.0)
                a = (tl.load(at, mask=x_ok, other=0.0).to(tl.float32) * inverse[:, None]).to(g.dtype) * g
            else:
                a = tl.load(at, mask=x_ok, other=0.0)
            if DOT:
                acc += tl.dot(a.to(w.dtype), tl.trans(w))  # [BLOCK_M, BLOCK_K] x [BLOCK_K, BLOCK_N], float32
            else:  # [BLOCK_M, 1, BLOCK_K] * [1, BLOCK_N, BLOCK_K] summed along K (products exact in float32)
                acc += tl.sum(a.to(w.dtype).to(tl.float32)[:, None, :] * w.to(tl.float32)[None, :, :], 2)
        if PDL:  # the next kernel may be placed now (it waits for this one's end before it reads)
            tl.extra.cuda.gdc_launch_dependents()
        if HAS_BIAS:
            acc += tl.load(B + cols, mask=col_ok, other=0.0).to(tl.float32)[None, :]
        out = acc.to(OUT.dtype.element_ty)  # the product as its module returns it
        ok = row_ok[:, None] & col_ok[None, :]
        if HAS_RESIDUAL:  # residual + product, rounded once: a half-precision add
            out = (out.to(tl.float32) + tl.load(R + rows[:, None] * sr + cols[None, :], mask=ok, other=0.0)
                   .to(tl.float32)).to(OUT.dtype.element_ty)
        tl.store(OUT + rows[:, None] * so + cols[None, :], out, mask=ok)

    return product


def block_n(n: int, programs: int = 128, least: int = 16, most: int = 64) -> int:
    """Outputs per program: about `programs` programs where N allows (one wave of a GPU's
    multiprocessors reads the weight), from `least` (tl.dot's 16) to `most`."""
    size = least
    while size < most and -(-n // (size * 2)) >= programs:
        size *= 2
    return size


def fused_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, *, prologue: str = "none",
                 norm_weight: torch.Tensor | None = None, eps: float = 1e-6,
                 residual: torch.Tensor | None = None, blocks: Blocks | None = None) -> torch.Tensor:
    """prologue(x) @ weight^T (+ bias) (+ residual) (see the module's docstring); x [..., K'] -> [..., N];
    blocks: how the kernel splits it (None: BLOCKS)."""
    n, k = weight.shape
    if prologue not in PROLOGUES:
        raise ValueError(f"unknown prologue {prologue!r}: use one of {', '.join(PROLOGUES)}")
    if x.shape[-1] != k * (2 if prologue == "gated" else 1) or (prologue == "norm") != (norm_weight is not None):
        raise ValueError(f"x's last dimension {x.shape[-1]} or the norm's weight does not fit a {prologue} prologue of K={k}")
    lead = x.shape[:-1]
    rows = x.reshape(-1, x.shape[-1]).contiguous()
    m = rows.shape[0]
    if m > MAX_ROWS:
        raise ValueError(f"{m} rows: at most {MAX_ROWS}")
    blocks = blocks or BLOCKS
    dot = m > blocks.narrow_rows
    block_m = MAX_ROWS if dot else 1 << max(m - 1, 0).bit_length()  # (narrow: rows padded to a power of two)
    size = block_n(n, blocks.programs) if dot else block_n(n, blocks.programs, least=1, most=16)
    weight = weight if weight.stride(-1) == 1 else weight.contiguous()
    out = torch.empty(m, n, device=x.device, dtype=x.dtype)
    res = residual.reshape(m, n).contiguous() if residual is not None else out
    launch = dependent_launch.kernel_options(x.device)
    _kernel()[(-(-n // size),)](
        rows, weight, bias if bias is not None else out, norm_weight if norm_weight is not None else out, res, out,
        m, n, k, rows.stride(0), weight.stride(0), res.stride(0), out.stride(0), eps,
        PROLOGUE=PROLOGUES[prologue], HAS_BIAS=bias is not None, HAS_RESIDUAL=residual is not None, DOT=dot,
        BLOCK_M=block_m, BLOCK_N=size, BLOCK_K=min(blocks.block_k, DOT_BLOCK_K) if dot else blocks.block_k,
        STAGES=blocks.stages, PREFETCH=launch["PDL"] and dependent_launch.prefetches(weight), num_stages=blocks.stages,
        **launch)
    return out.reshape(*lead, n)


@torch.library.custom_op("playground::fused_linear", mutates_args=())
def fused_linear_op(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, prologue: str,
                    norm_weight: torch.Tensor | None, eps: float, residual: torch.Tensor | None) -> torch.Tensor:
    """fused_linear as one op for torch.compile (it calls the kernel as it is, no tracing into Triton)."""
    return fused_linear(x, weight, bias, prologue=prologue, norm_weight=norm_weight, eps=eps, residual=residual)


@fused_linear_op.register_fake
def _(x, weight, bias, prologue, norm_weight, eps, residual):
    return x.new_empty(*x.shape[:-1], weight.shape[0])
