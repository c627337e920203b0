"""Programmatic dependent launch (Hopper, compute capability 9.0, and later): a kernel launched this
way may be placed on the multiprocessors while the kernel before it on its stream is still
finishing, and waits for that one's end (griddepcontrol.wait: all its writes visible) before it
reads or writes anything; the kernel before may let it in once it has read its inputs
(griddepcontrol.launch_dependents). What it saves is the gap between two kernels (one draining, the
next being launched and its programs set up), which a CUDA graph's replay shrinks but does not remove.

Why it may matter here: on an H200 (2026-12-04, BENCHMARKS.md "GPU") a Qwen2.5-0.5B-shaped draft
step was about 360 kernels in 1.25 ms, 24 layers of about 15, of which the four products took 22 us
a layer and the rest (attention, norms, rotary, the cache write, split-K's reduce and the gaps
between them) about 27. Whether it pays is not yet measured: scripts/gpu_check.py --only pdl builds
the pair with and without it in one process, rows interleaved.

Opt-in: PLAYGROUND_PDL=1 launches every Triton kernel of a compiled pass this way on such a GPU,
inductor's (torch.compile's option triton.enable_pdl, from torch 2.11; its kernels wait before
their first read of a buffer an earlier kernel wrote) and the engine's own (fused_linear,
decode_attention: each program waits before its first load and lets the next kernel in after its
main loop; fused_linear's first ask L2 for their weights). cuBLAS's products launch as they always
do: after the kernel before them has ended."""
import functools

import torch

from playground.limits import env_flag

ON = env_flag("PLAYGROUND_PDL", False)  # read at import; scripts/gpu_check.py sets it per variant
PREFETCH = True  # launched dependent, fused_linear's programs first ask L2 for their weights (prefetch.global.L2):
# the product may stream them while the kernel before ends (gpu_check's `fused` times both)


def launches_dependent(device: torch.device) -> bool:
    """Whether kernels for this device launch programmatically dependent: ON, and a GPU that has it."""
    return ON and device.type == "cuda" and _hopper_or_later(device.index if device.index is not None
                                                             else torch.cuda.current_device())


@functools.cache
def _hopper_or_later(index: int) -> bool:
    return torch.cuda.get_device_capability(index)[0] >= 9


def inductor_options(device: torch.device) -> dict:
    """torch.compile options that make inductor's Triton kernels launch dependent where this device's do."""
    return {"triton.enable_pdl": True} if launches_dependent(device) else {}
