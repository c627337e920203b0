"""Every Triton kernel of the engine compiles for an H100/H200 (sm90) ahead of time, on a CPU without
a GPU: Triton's interpreter (which the other kernel tests run) executes what the GPU's compiler may
refuse (a layout, a scalar atomic in a branch, a block of one row), and a lent GPU's minutes are too
few to find that out there. Compiled to a cubin by the ptxas that Triton's wheel carries."""
import platform

import pytest

if platform.system() == "Linux" and platform.machine() == "x86_64":
    import triton  # (xgrammar installs it here: a skip would hide what the other kernel tests fail on)
else:  # (xgrammar brings no triton elsewhere, nor has a GPU of sm90 to compile for)
    triton = pytest.importorskip("triton")
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from playground.engine import decode_attention, fused_linear

SM90 = GPUTarget("cuda", 90, 32)


def compiled(kernel, pointers: dict, floats: set, constants: dict, unaligned: set = frozenset(), **options):
    """kernel compiled for sm90 (its .asm["cubin"], ["ptx"]): pointers name -> element type, floats fp32
    scalars, other arguments i32; each pointer and integer but those `unaligned` a multiple of 16, as
    Triton's launcher specializes them where they are (without it no load is vectorized or pipelined)."""
    def kind(name):
        return "constexpr" if name in constants else pointers.get(name) or ("fp32" if name in floats else "i32")
    signature = {name: kind(name) for name in kernel.arg_names}
    aligned = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(kernel.arg_names)
               if signature[name] != "constexpr" and name not in floats | unaligned}
    source = ASTSource(fn=kernel, signature=signature, constexprs=constants, attrs=aligned)
    return triton.compile(source, target=SM90, options={"num_warps": 4, **options})


@pytest.mark.parametrize("dot, block_m, block_n, block_k", [
    (True, 16, 16, 128), (True, 16, 64, 256),  # tl.dot on rows padded to 16
    (False, 1, 4, 512), (False, 2, 16, 256), (False, 1, 1, 512)])  # a step's rows summed, down to one output
def test_the_fused_product_compiles_for_sm90(dot, block_m, block_n, block_k):
    pointers = dict.fromkeys(["X", "W", "B", "G", "R", "OUT"], "*bf16")
    for prologue in fused_linear.PROLOGUES.values():
        for extras in (True, False):  # bias and residual, or neither
            constants = dict(PROLOGUE=prologue, HAS_BIAS=extras, HAS_RESIDUAL=extras, DOT=dot, BLOCK_M=block_m,
                             BLOCK_N=block_n, BLOCK_K=block_k, STAGES=3, PDL=False,
                             PREFETCH=False)
            kernel = compiled(fused_linear._kernel(), pointers, {"eps"}, constants, {"M"}, num_stages=3)
            assert kernel.asm["cubin"] and "cp.async" in kernel.asm["ptx"], constants  # the weight's loads in flight
            # ahead of their use (Triton's pipelining; a latency a step otherwise: the products are bound by it)


@pytest.mark.parametrize("one_kernel", [False, True])
def test_the_decode_attention_kernels_compile_for_sm90(one_kernel):
    split, combine = decode_attention._kernels()
    sizes = dict(ROWS=7, D=64, BLOCK_M=16, BLOCK_D=64, CHUNKS=32, BLOCK_C=32)  # a 0.5B draft step's heads
    pointers = dict(Q="*bf16", K="*bf16", V="*bf16", MASK="*u8", O="*fp32", STATS="*fp32", OUT="*bf16", COUNT="*i32")
    unaligned = {"heads", "n", "length"}  # (a cache's length need not be a multiple of 16)
    kernel = compiled(split, pointers, {"scale"}, dict(sizes, CHUNK=128, BLOCK_N=64, ONE_KERNEL=one_kernel, PDL=False),
                      unaligned)
    assert kernel.asm["cubin"] and ("cp.async" in kernel.asm["ptx"]) == one_kernel  # the combine's chunks pipelined
    if one_kernel:  # (the split's blocks are unrolled instead) ... and the arrival a release and an acquire at the
        assert "atom.global.gpu.acq_rel" in kernel.asm["ptx"]  # GPU's scope: partials written before, read after
    else:
        assert "cp.async" in compiled(combine, pointers, set(), dict(sizes, PDL=False), {"heads"}).asm["ptx"]
    assert "griddepcontrol" not in kernel.asm["ptx"]  # (launched as any kernel unless PLAYGROUND_PDL)


def first_global_access(ptx: str) -> int:
    return min(i for i in (ptx.find(op) for op in ("ld.global", "st.global", "cp.async.", "atom.", "red.")) if i >= 0)


def test_kernels_launched_dependent_wait_before_their_first_global_access():
    """PLAYGROUND_PDL (playground.engine.dependent_launch): each kernel waits for the one before it
    (griddepcontrol.wait) ahead of every load and store (the one before may still write what it
    reads, or read what it writes: a buffer freed by it, given to this one), and lets the next in;
    the products first ask L2 for their weights (a hint: no load, nothing written)."""
    fused = dict(PROLOGUE=fused_linear.PROLOGUES["norm"], HAS_BIAS=True, HAS_RESIDUAL=True, BLOCK_M=1,
                 BLOCK_N=4, BLOCK_K=256, STAGES=3, PDL=True, PREFETCH=True)
    split, combine = decode_attention._kernels()
    sizes = dict(ROWS=7, D=64, BLOCK_M=16, BLOCK_D=64, CHUNKS=32, BLOCK_C=32, PDL=True)
    attention = dict(Q="*bf16", K="*bf16", V="*bf16", MASK="*u8", O="*fp32", STATS="*fp32", OUT="*bf16", COUNT="*i32")
    kernels = [compiled(fused_linear._kernel(), dict.fromkeys(["X", "W", "B", "G", "R", "OUT"], "*bf16"), {"eps"},
                        dict(fused, DOT=dot), {"M"}, num_stages=3, launch_pdl=True) for dot in (False, True)]
    kernels += [compiled(split, attention, {"scale"}, dict(sizes, CHUNK=128, BLOCK_N=64, ONE_KERNEL=one), {"heads", "n", "length"},
                         launch_pdl=True) for one in (False, True)]
    kernels.append(compiled(combine, attention, set(), sizes, {"heads"}, launch_pdl=True))
    for kernel in kernels:
        ptx = kernel.asm["ptx"]
        assert kernel.metadata.launch_pdl and "griddepcontrol.launch_dependents" in ptx
        assert -1 < ptx.find("griddepcontrol.wait") < first_global_access(ptx)
    for kernel in kernels[:2]:  # the products' weights asked of L2 first: they depend on no kernel before
        ptx = kernel.asm["ptx"]
        assert -1 < ptx.find("prefetch.global.L2") < ptx.find("griddepcontrol.wait")

