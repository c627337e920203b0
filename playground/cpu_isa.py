"""This CPU's flags and oneDNN's instruction-set limit (ONEDNN_MAX_CPU_ISA, a user's): which bfloat16
products torch's CPU kernels may use. No torch here.

With AMX (a 2-core Intel Xeon, torch 2.13, oneDNN 3.12) a bfloat16 product summed a row of 40 keys and of 41
(the last weighted zero, as a verify pass masks it) in other orders, and greedy speculation on SmolLM2
left the target alone at its 16th token; until 2026-12-05 playground held oneDNN below AMX for it, which
made a 500-token prompt's pass 2.6-3x slower. The attention now sums weights and values over fixed,
zero-padded blocks of keys there (models.batch_invariant), whose rows agree with AMX on."""
import os

WITHOUT_BF16 = {"SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2", "AVX512_CORE", "AVX512_CORE_VNNI"}  # oneDNN's
WITHOUT_AMX = WITHOUT_BF16 | {"AVX512_CORE_BF16", "AVX512_CORE_FP16", "AVX10_1_512"}  # names of ISAs without them


def cpu_flags() -> frozenset[str]:
    """This CPU's feature flags (Linux's /proc/cpuinfo; none where it cannot be read)."""
    try:
        with open("/proc/cpuinfo") as f:
            return frozenset(next((line for line in f if line.startswith("flags")), "").split())
    except OSError:
        return frozenset()


def user_limit() -> str:
    """The limit oneDNN reads (ONEDNN_MAX_CPU_ISA, else the older DNNL_MAX_CPU_ISA), upper-cased; "" if none."""
    return (os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA") or "").upper()


def amx_allowed() -> bool:
    """Whether oneDNN may multiply with AMX here: the CPU has it and no limit below it is set (a limit
    set after torch's first CPU product would not hold)."""
    return "amx_bf16" in cpu_flags() and user_limit() not in WITHOUT_AMX


def bf16_allowed() -> bool:
    """Whether oneDNN's limit leaves it bfloat16 dot products (where the CPU has them)."""
    return user_limit() not in WITHOUT_BF16
