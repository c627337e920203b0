"""Where a model goes and in what precision: the device, the dtype for this CPU or GPU, the memory
its weights will take, the attention implementation that keeps verification exact on a CPU (the
thread count for its short passes: decode_threads)."""
import functools
import json
import os
import pathlib
import shutil

import torch

from playground.errors import PlaygroundError
from playground.limits import compile_refused
from playground.cpu_isa import bf16_allowed, cpu_flags
from playground.models.batch_invariant import ATTENTION as BATCH_INVARIANT_ATTENTION, ROW_INVARIANT as BATCH_INVARIANT_ROW_INVARIANT, eager_rows_agree
from playground.models import row_products


def resolve_device(name: str = "auto") -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise PlaygroundError(f"device '{name}' asked for, but no CUDA GPU is available here; use --device cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        device = None
    if device is None or device.type not in ("cpu", "cuda"):  # (torch names mps, meta, xpu...: each failed
        # later with a traceback: "PyTorch is not linked with support for mps devices")
        raise PlaygroundError(f"unknown device '{name[:40]}': use auto, cpu or cuda")
    return device


SMALL_MODEL = 100_000_000  # parameters


def on_zero_gpu() -> bool:
    """Whether this process runs on a Hugging Face ZeroGPU Space (a GPU lent per call)."""
    return bool(os.environ.get("SPACES_ZERO_GPU"))


def compiles_by_default() -> bool:
    """Whether runs on this host use compiled passes unless told otherwise: with CUDA (on an H200
    the compiled Qwen2.5-7B alone made 180 tok/s, eager under 50: BENCHMARKS.md), not on ZeroGPU
    (a compile outlasts its lease), never on a CPU (a compile costs about 20 s a pass there and
    pays little), nor where the host turns them off (compile_refused)."""
    return torch.cuda.is_available() and not on_zero_gpu() and not compile_refused()


def default_dtype(device: torch.device, float32_bytes: int = 0, stored_bf16: bool = False) -> torch.dtype:
    """bfloat16 on a GPU. On a CPU float32: through row_products' kernel past SMALL_MODEL parameters, its linear weights
    held in bfloat16 where the checkpoint is (stored_bf16: halves), which ran faster than oneDNN's bfloat16 products
    even on CPUs that multiply bfloat16 natively (the exact SmolLM2-135M alone 1.4-1.55x, a Qwen2.5-1.5B-shaped pass
    2.3x on a 2-core AMD EPYC with AVX512-BF16: BENCHMARKS.md). bfloat16 on such a CPU where the kernel would read
    float32 weights (a float16 or float32 checkpoint, twice the bytes) or is not built. PLAYGROUND_CPU_DTYPE overrides."""
    if device.type == "cuda":
        return torch.bfloat16
    if chosen := cpu_dtype_asked():
        return chosen
    big = float32_bytes > 4 * SMALL_MODEL
    held_by_kernel = stored_bf16 and row_products.kernel() is not None
    return torch.bfloat16 if big and native_bf16() and not held_by_kernel else torch.float32


def cpu_dtype_asked() -> torch.dtype | None:
    """PLAYGROUND_CPU_DTYPE's dtype, None where unset (app.py reads it at start-up: a bad value was
    said first to a visitor's run, the warm-up's traceback in the log)."""
    chosen = os.environ.get("PLAYGROUND_CPU_DTYPE", "").strip()
    if chosen in ("float32", "bfloat16"):
        return getattr(torch, chosen)
    if chosen:
        raise PlaygroundError(f"environment variable PLAYGROUND_CPU_DTYPE must be float32 or bfloat16, got {chosen[:40]!r}")
    return None


def native_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AVX512-BF16 or AMX; Linux's CPU flags), oneDNN's
    limit allowing it (ONEDNN_MAX_CPU_ISA=AVX2 emulates bfloat16 there)."""
    return bool({"avx512_bf16", "amx_bf16"} & cpu_flags()) and bf16_allowed()


def eager_rows_invariant() -> bool:
    """Whether bfloat16 eager attention gives a query the same row whatever the pass's width on this
    CPU (see batch_invariant): measured so with AVX512-BF16 (2-core AMD EPYC, torch 2.13), and on a 2-core
    Intel Xeon with AMX, its products summing fixed blocks of keys there. Not with AVX2 alone (bfloat16
    emulated). Where the flags say so, it is tried too, once (batch_invariant.eager_rows_agree): another
    oneDNN could split a product's keys otherwise."""
    return "avx512_bf16" in cpu_flags() and bf16_allowed() and eager_rows_agree()


def precision(model: torch.nn.Module) -> str:
    """A model's dtype as a bench records it ("float32", "bfloat16"), and where a float32 model's linear weights
    are held in bfloat16 (row_products.hold_halved), that too."""
    name = str(model.dtype).removeprefix("torch.")
    return f"{name}, linear weights held in bfloat16" if row_products.float32_copy_bytes(model) else name  # (bytes of held layers)


def free_memory(device: torch.device) -> int:
    """Bytes a load may still take: the GPU's free memory, or the machine's available memory bounded
    by the container's own limit (/proc/meminfo shows the host's; a Space's container has less)."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    with open("/proc/meminfo") as f:
        info = dict(line.split(":", 1) for line in f)
    available = int(info["MemAvailable"].split()[0]) * 1024
    return min(available, container_room())


CGROUP_FILES = (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),  # cgroup v2
                ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"))  # v1


def container_room(files=CGROUP_FILES) -> int:
    """The container's memory limit less what it uses; unbounded where there is no limit."""
    for limit_file, usage_file in files:
        try:
            limit, usage = (pathlib.Path(path).read_text().strip() for path in (limit_file, usage_file))
        except OSError:
            continue
        if limit.isdigit() and usage.isdigit() and int(limit) < 2**60:  # v1 writes a huge number for "none"
            return max(0, int(limit) - int(usage))
    return 2**63


def attention_for(device: torch.device, dtype: torch.dtype, need_bytes: int) -> dict:
    """The attention batch_invariant needs (see there) for half precision on a CPU (the eager one for
    bfloat16 where its rows were measured invariant, see eager_rows_invariant; else the row-invariant
    one), and for float32 models past SMALL_MODEL on a CPU (smaller ones, like the demo pair, keep transformers' choice and
    may run compiled); else transformers' choice."""
    if device.type == "cpu" and dtype in (torch.bfloat16, torch.float16):
        eager = dtype == torch.bfloat16 and eager_rows_invariant()
        return {"attn_implementation": BATCH_INVARIANT_ATTENTION if eager else BATCH_INVARIANT_ROW_INVARIANT}
    if device.type == "cpu" and dtype == torch.float32 and need_bytes > 4 * SMALL_MODEL:
        return {"attn_implementation": BATCH_INVARIANT_ROW_INVARIANT}
    return {}


def device_map_for(device: torch.device, need_bytes: int) -> dict:
    """One device when it fits; otherwise let accelerate spread the model (device_map='auto')."""
    if device.type == "cuda" and (torch.cuda.device_count() > 1 or need_bytes > free_memory(device) * 0.9):
        return {"device_map": "auto"}
    return {"device_map": device}


def checkpoint_bytes(path: pathlib.Path, dtype: torch.dtype) -> int:
    """Memory the weights will take, from the checkpoint files (rescaled to the load dtype)."""
    files = list(path.glob("*.safetensors")) or list(path.glob("*.bin"))
    for f in files:  # safetensors reports an unreadable file as missing: open each one first
        open(f, "rb").close()
    size = sum(f.stat().st_size for f in files)
    stored = _stored_dtype_bytes(path)
    return int(size * torch.finfo(dtype).bits / 8 / stored) if stored else size


def config_bytes(path: pathlib.Path, dtype: torch.dtype, linear_only: bool = False) -> int | None:
    """Memory the weights will take (linear_only: the nn.Linear weights alone, what packing copies),
    from config.json alone, so a hub model is sized before its download; None where transformers
    cannot build it from the config."""
    sizes = config_parameters(path)
    if sizes is None:
        return None
    parameters, linear, _ = sizes
    return (linear if linear_only else parameters) * torch.finfo(dtype).bits // 8


@functools.lru_cache(maxsize=64)  # a 7B config takes about 1.6 s to build on 2 cores: once per snapshot
def config_parameters(path: pathlib.Path) -> tuple[int, int, int] | None:
    """(parameters, of which in nn.Linear weights, of which tied to another module: an output layer sharing the
    embedding's) of the model config.json describes, built on the meta device (no memory, no weights); None where
    transformers cannot build it."""
    from transformers import AutoConfig, AutoModelForCausalLM
    try:
        config = AutoConfig.from_pretrained(path, trust_remote_code=False)
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config, trust_remote_code=False)
    except Exception:  # noqa: BLE001  (OSError, ValueError, a config transformers' strict checks refuse...)
        return None
    linears = {id(m.weight): m.weight for m in model.modules() if isinstance(m, torch.nn.Linear)}
    others = {id(p) for m in model.modules() if not isinstance(m, torch.nn.Linear) for p in m.parameters(recurse=False)}
    tied = sum(w.numel() for key, w in linears.items() if key in others)
    return sum(p.numel() for p in model.parameters()), sum(w.numel() for w in linears.values()), tied


def stored_bytes(path: pathlib.Path, float32_bytes: int) -> int:
    """Bytes the checkpoint files take on disk, from their float32 size and config.json's dtype."""
    return float32_bytes * (_stored_dtype_bytes(path) or 4) // 4


def free_disk(path: pathlib.Path) -> int:
    return shutil.disk_usage(path).free


def _stored_dtype_bytes(path: pathlib.Path) -> int:
    return {"float32": 4, "float16": 2, "bfloat16": 2}.get(stored_dtype(path), 0)


def stored_dtype(path: pathlib.Path) -> str:
    """The dtype config.json says its weights are stored in ("bfloat16"...; "" where it says none)."""
    cfg = config_fields(path)
    return str(cfg.get("dtype") or cfg.get("torch_dtype") or "")


def config_fields(path: pathlib.Path) -> dict:
    """config.json's top-level fields ({} where it is missing, unreadable or not an object)."""
    try:
        cfg = json.loads((path / "config.json").read_text())
    except (OSError, ValueError):
        return {}
    return cfg if isinstance(cfg, dict) else {}
