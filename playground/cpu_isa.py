"""Hold oneDNN (torch's CPU products) below AMX, so that bfloat16 attention rows on such CPUs do not
depend on how many tokens a pass carries. No torch here: playground's import calls this before
any product runs, and oneDNN reads its limit once, at its first product.

Measured on a 2-core Intel Xeon with AMX (torch 2.13, oneDNN 3.12): its AMX products summed a
row of 40 keys and of 41 (the last weighted zero, as a verify pass masks it) in other orders, so a
verify pass of k+1 tokens did not give one-token passes' logits, and greedy speculation on SmolLM2
left the target alone at its 16th token (the 68th and 85th on two other prompts). Held to
AVX512-BF16, the same eager attention agreed at every context scanned, as on AVX512-BF16 CPUs
without AMX. The default preset, k=3, 128 tokens, three prompts twice in each of two processes:
1.29x and 1.35x the target alone (medians), identical, against 1.04x and 1.07x with the row-by-row
attention that AMX would need instead (placement picks it where a user's own limit allows AMX; a
user's limit is kept). What the limit costs there: a pass of 1 or 4 tokens after 150 took 45-47 ms against 39-46 with
AMX, a 500-token prompt pass 768-787 ms against 253-299 (two processes each)."""
import os

BELOW_AMX = "AVX512_CORE_BF16"
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


def hold_below_amx() -> None:
    """On a CPU with AMX and AVX512-BF16, limit oneDNN to AVX512-BF16 unless a limit is set."""
    flags = cpu_flags()
    if "amx_bf16" in flags and "avx512_bf16" in flags and not user_limit():
        os.environ["ONEDNN_MAX_CPU_ISA"] = BELOW_AMX


def amx_allowed() -> bool:
    """Whether oneDNN may multiply with AMX here: the CPU has it and no limit below it is set (a limit
    set after torch's first CPU product would not hold; playground sets its own at import)."""
    return "amx_bf16" in cpu_flags() and user_limit() not in WITHOUT_AMX


def bf16_allowed() -> bool:
    """Whether oneDNN's limit leaves it bfloat16 dot products (where the CPU has them)."""
    return user_limit() not in WITHOUT_BF16
