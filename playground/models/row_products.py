"""float32 matrix products whose every row is summed in one fixed order, whatever the pass's width and
thread count, on a CPU with AVX2 and FMA: a small C kernel (row_products.c) built once per machine with
its C compiler (0.5 s) and kept in the cache (~/.cache/playground/kernels/), called through ctypes.

Why: on CPUs without bfloat16 dot products (most laptops) SmolLM2 runs in float32, and a verify pass
must give bitwise the rows one-token passes give (batch_invariant). MKL's small float32 products are
neither (their rows change with the row count); oneDNN's from packed weights are, but cost 1.7-1.8x
MKL's one-row products on an Intel CPU held to AVX2 (BENCHMARKS.md), so the exact target alone ran
that much slower than plain decoding. This kernel's one-row products are as fast as MKL's or faster
(row_products.c says how; BENCHMARKS.md has the measurements), and it keeps no second copy of the weights.

A layer whose float32 weights are all bfloat16 values (a bfloat16 checkpoint loaded in float32: SmolLM2's cached
conversion, Qwen's and DeepSeek's files, the SmolLM2 feature draft) is held in bfloat16 (hold_halved), which the
kernel widens back exactly: bitwise the same products from half the bytes (a head tied to the embedding gets a bfloat16
copy of its own: SmolLM2 holds 382 MB instead of 538). SmolLM2's linear layers on
a 2-core AMD EPYC, one thread, one row: 10.3 ms against 20.1 from float32 (2 rows 12.4 / 19.5, 4 rows 14.9 / 19.7).

The same library holds row_attention.c (called by row_attention.py): a pass's attention rows, each alone; and
row_layer.c (called by row_layers.py): a decoder layer's norms, products and rotary around its attention.

Where it cannot be built (no C compiler, not Linux on x86-64 with AVX2 and FMA, torch not on GNU
OpenMP) or PLAYGROUND_ROW_KERNEL=0, kernel() is None and batch_invariant keeps oneDNN's packed products and
its own torch operations for the attention."""
import contextlib
import ctypes
import functools
import hashlib
import logging
import os
import pathlib
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from playground.cpu_isa import cpu_flags
from playground.limits import env_flag
from playground.models.in_turns import medians_in_turns, on_threads, seconds_of
from playground.models.packaged import cache_root

log = logging.getLogger("playground.row_products")

SOURCES = tuple(pathlib.Path(__file__).with_name(name) for name in ("row_products.c", "row_attention.c", "row_layer.c"))
HEADER = pathlib.Path(__file__).with_name("row_simd.h")  # what the three share (part of the library's digest)
FLAGS = ("-O3", "-mavx2", "-mfma", "-ffp-contract=off", "-fopenmp", "-shared", "-fPIC")  # no fast-math: sums in order
BUILD_SECONDS = 120  # a compiler that takes longer is given up on (the run goes on with oneDNN's products)
CHUNK_ROWS = 256  # rows per call at most (a prompt's pass): the rows a block of weights is applied to stay in cache
TIMINGS = 5  # faster_than_plain: timings of each way in turns, after one to warm up
CLEARLY = 0.9  # faster_than_plain: the kernel where its median takes under 90% of F.linear's


@dataclass(frozen=True, eq=False)
class Kernels:
    """The library's C functions: products from float32 weights and from bfloat16 ones, each f(x, w, y, M, K, N,
    threads) (row_products.c), the attention of a pass's rows (row_attention.c, called by row_attention.py), and a
    decoder layer's two halves around its attention (row_layer.c, called by row_layers.py). Hashed by identity: a
    check of one loaded library can be cached against it."""
    float32: Callable
    bfloat16: Callable
    attention: Callable
    layer_in: Callable
    layer_out: Callable

    def products(self, dtype: torch.dtype) -> Callable:
        """The products from weights of this dtype (float32 or bfloat16)."""
        return self.bfloat16 if dtype == torch.bfloat16 else self.float32


@functools.lru_cache(maxsize=1)
def kernel() -> Kernels | None:
    """The C functions, or None where they cannot be had here."""
    if not wanted():
        return None
    try:
        lib = ctypes.CDLL(str(built()))
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        log.warning("float32 row kernel not built (%s); oneDNN's packed products and torch's attention are used "
                    "(PLAYGROUND_ROW_KERNEL=0 says so without this line)", str(exc)[:200])
        return None
    for fn in (lib.row_products, lib.row_products_bf16):
        fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 3 + [ctypes.c_int]
        fn.restype = None
    lib.row_attention.argtypes = [ctypes.c_void_p] * 6 + [ctypes.c_int64] * 8 + [ctypes.c_float]
    lib.row_attention.restype = None
    p, i, f, n = ctypes.c_void_p, ctypes.c_int, ctypes.c_float, ctypes.c_int64
    lib.row_layer_in.argtypes = [p, p, f, p, i, p, p, p, f, p, p, p, p] + [n] * 5 + [i]
    lib.row_layer_out.argtypes = [p, p, p, i, p, p, f, p, i, p, p, i, p, p, p, p, p] + [n] * 4 + [i]
    lib.row_layer_in.restype = lib.row_layer_out.restype = None
    kernels = Kernels(lib.row_products, lib.row_products_bf16, lib.row_attention, lib.row_layer_in, lib.row_layer_out)
    return kernels if _rows_agree(kernels) else None


def wanted() -> bool:
    """Linux on x86-64 with AVX2 and FMA, torch's threads GNU OpenMP's (the kernel's then share them:
    a second OpenMP team would slow every product), unless PLAYGROUND_ROW_KERNEL=0."""
    return (asked() and sys.platform == "linux" and platform.machine() == "x86_64"
            and {"avx2", "fma"} <= cpu_flags() and _gnu_openmp_loaded())


def asked() -> bool:
    """PLAYGROUND_ROW_KERNEL: on unless 0 (a value neither on nor off raises PlaygroundError)."""
    return env_flag("PLAYGROUND_ROW_KERNEL", True)


def _gnu_openmp_loaded() -> bool:
    try:
        with open("/proc/self/maps") as f:
            return any("libgomp" in line for line in f)
    except OSError:
        return False


def built() -> pathlib.Path:
    """The kernel's shared library, compiled where this source, these flags and this compiler have none yet. It is
    written beside, flushed to disk and renamed into place, then its digest beside it: a library that does not match
    its digest (cut short by a crash or a partial copy of the cache: loading one killed the process with a bus
    error) is built again, and processes building at once each see a whole file."""
    compiler = shlex.split(os.environ.get("CC", "")) or [shutil.which("cc") or shutil.which("gcc") or ""]
    if not compiler[0]:
        raise OSError("no C compiler (cc or gcc) on the PATH")
    sources = b"".join(source.read_bytes() for source in (*SOURCES, HEADER))
    digest = hashlib.sha256(sources + " ".join(FLAGS + tuple(compiler)).encode()).hexdigest()[:16]
    target = cache_root() / "kernels" / f"row_products-{digest}.so"
    mark = target.with_name(target.name + ".sha256")
    if target.is_file() and mark.is_file() and mark.read_text().strip() == _file_digest(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        out = pathlib.Path(tmp) / target.name
        _compile(compiler, out)
        _on_disk(out)
        os.replace(out, target)
        written = pathlib.Path(tmp) / mark.name
        written.write_text(_file_digest(target))
        _on_disk(written)
        os.replace(written, mark)
    return target


def _compile(compiler: list[str], out: pathlib.Path) -> None:
    """SOURCES compiled to out, the compiler in a process group of its own, all of it killed past BUILD_SECONDS or on
    any interruption (Ctrl-C reaches the group no more): a wrapper's children too, such as ccache's (killing only the
    compiler left them running). After the kill only the compiler is waited for, not its pipes: a helper that left
    the group (setsid) may hold them open."""
    proc = subprocess.Popen([*compiler, *FLAGS, "-o", str(out), *map(str, SOURCES), "-lm"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=BUILD_SECONDS)
    except BaseException as exc:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
        if isinstance(exc, subprocess.TimeoutExpired):
            raise OSError(f"{' '.join(compiler)} took over {BUILD_SECONDS} s") from None
        raise
    if proc.returncode:
        raise OSError(f"{' '.join(compiler)} failed: {err.strip()[-300:]}")


def _file_digest(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _on_disk(path: pathlib.Path) -> None:
    """The file's bytes flushed to the disk (before it is renamed into place)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _rows_agree(kernels: Kernels) -> bool:
    """A check of the build: products of 1 to 9 rows (every block plan and its leftover rows; K with a tail past its
    eights, N past its blocks) give each row bitwise as alone, and near a double-precision product; from bfloat16
    weights, bitwise what the float32 kernel gives from the same values."""
    gen = torch.Generator().manual_seed(0)
    x, w = torch.randn(9, 37, generator=gen), torch.randn(11, 37, generator=gen).bfloat16().float()
    ones = torch.cat([_call(kernels.float32, x[i:i + 1], w) for i in range(9)])
    near = torch.allclose(ones.double(), x.double() @ w.double().T, atol=1e-4)
    ok = near and all(torch.equal(_call(kernels.products(dtype), x[:m], w.to(dtype)), ones[:m])
                      for dtype in (torch.float32, torch.bfloat16) for m in range(1, 10))
    if not ok:
        log.warning("float32 row kernel failed its check; oneDNN's packed products are used")
    return ok


def _call(fn, x: torch.Tensor, w: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """x [M, K] @ w [N, K].T -> out [M, N] (a new tensor where none is given), all contiguous, x and out float32, w of
    fn's dtype."""
    (m, k), n = x.shape, w.shape[0]
    y = torch.empty(m, n, dtype=torch.float32) if out is None else out
    fn(x.data_ptr(), w.data_ptr(), y.data_ptr(), m, k, n, torch.get_num_threads())
    return y


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """F.linear(x, weight, bias) through the kernel (kernel() not None) for float32 CPU inputs, x [..., in], the weight
    float32 or bfloat16 (hold_halved: the product as from its float32 values), CHUNK_ROWS rows a call (each row's
    outputs are the same whatever rows go with it); F.linear itself for anything else (another dtype, a width that
    does not match, no rows, autograd wanting a gradient), which says what is wrong; a bfloat16 weight then widened
    for a float32 input, as the kernel would."""
    if (x.dtype != torch.float32 or weight.dtype not in (torch.float32, torch.bfloat16) or x.device.type != "cpu"
            or weight.device.type != "cpu"
            or weight.dim() != 2 or x.shape[-1] != weight.shape[1] or x.numel() == 0
            or (torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad))):
        widened = x.dtype == torch.float32 and weight.dtype == torch.bfloat16
        return F.linear(x, weight.float() if widened else weight, bias)
    rows = x.reshape(-1, x.shape[-1]).contiguous()  # [M, in]
    w = weight if weight.is_contiguous() else weight.contiguous()
    y = torch.empty(rows.shape[0], weight.shape[0], dtype=torch.float32)  # [M, out]
    for start in range(0, rows.shape[0], CHUNK_ROWS):  # (a chunk of y's rows is contiguous: written in place)
        _call(kernel().products(w.dtype), rows[start:start + CHUNK_ROWS], w, y[start:start + CHUNK_ROWS])
    if bias is not None:
        y += bias
    return y.reshape(*x.shape[:-1], weight.shape[0])


def module_forward(module: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """nn.Linear.forward through the kernel (module.forward = functools.partial(module_forward, module))."""
    return linear(x, module.weight, module.bias)


def halved(weight: torch.Tensor) -> torch.Tensor | None:
    """A float32 weight as bfloat16 where every value is one (the kernel's products from it are then bitwise the
    float32 weight's), else None."""
    if weight.dtype != torch.float32:
        return None
    half = weight.bfloat16()
    return half if torch.equal(half.float(), weight) else None


def hold_halved(module: torch.nn.Linear) -> None:
    """A float32 linear layer whose products go through the kernel: its weight held in bfloat16 where that keeps every
    value (halved), freeing the float32 one (a weight tied to an embedding stays the embedding's)."""
    if (half := halved(module.weight)) is not None:
        module.weight = torch.nn.Parameter(half, requires_grad=False)


def _held(modules) -> list[torch.nn.Linear]:
    """The linear layers among modules whose weight is held in bfloat16 for the kernel (hold_halved)."""
    return [m for m in modules if isinstance(m, torch.nn.Linear) and m.weight.dtype == torch.bfloat16
            and getattr(m.__dict__.get("forward"), "func", None) is module_forward]


def float32_copy_bytes(model: torch.nn.Module) -> int:
    """Bytes float32_weights would copy for a model's layers held in bfloat16 (0: none held)."""
    return sum(m.weight.numel() * 4 for m in _held(model.modules()))


@contextlib.contextmanager
def float32_weights(modules: list[torch.nn.Linear]):
    """Within: every layer of modules held in bfloat16 (hold_halved) holds float32 again, as F.linear needs; the
    bfloat16 weights back after (a second copy meanwhile: bench asks float32_copy_bytes first)."""
    held = [(m, m.weight) for m in _held(modules)]
    try:
        for module, weight in held:
            module.weight = torch.nn.Parameter(weight.float(), requires_grad=False)
        yield
    finally:
        for module, weight in held:
            module.weight = weight


def faster_than_plain(weights: list[torch.Tensor], threads: int | None = None) -> bool:
    """Whether the kernel's one-row products with these float32 CPU weights [out, in] (held in bfloat16 where that
    keeps them, as they would be: halved) take clearly less time here than F.linear's (MKL's), timed in turns on the
    thread count the model decodes with (threads; None: all): for a model that need not be exact, such as a feature
    draft, which takes whichever is faster. SmolLM2's feature draft on a 2-core AMD EPYC held to AVX2, float32
    weights: 1.43 ms a step's products against 2.26 (BENCHMARKS.md); an Intel CPU's MKL may be otherwise."""
    if kernel() is None or not weights or any(w.dtype != torch.float32 or w.device.type != "cpu" for w in weights):
        return False
    plain = [(torch.zeros(1, w.shape[1]), w, None) for w in weights]  # one row each: x [1, in], w, no bias
    by_kernel = [(x, w if (half := halved(w)) is None else half, None) for x, w, _ in plain]
    with on_threads(threads), torch.inference_mode():
        medians = medians_in_turns({"kernel": functools.partial(seconds_of, linear, by_kernel),
                                    "plain": functools.partial(seconds_of, F.linear, plain)}, TIMINGS)
    return medians["kernel"] < CLEARLY * medians["plain"]
