"""Every Triton kernel of the engine compiles for an H100/H200 (sm90) ahead of time, on a CPU without
a GPU: Triton's interpreter (which the other kernel tests run) executes what the GPU's compiler may
refuse (a layout, a scalar atomic in a branch, a block of one row), and a lent GPU's minutes are too
few to find that out there. Compiled to a cubin by the ptxas that Triton's wheel carries."""
import pytest

triton = pytest.importorskip("triton")
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

from playground.engine import decode_attention, fused_linear  # noqa: E402

SM90 = GPUTarget("cuda", 90, 32)


def compiled(kernel, pointers: dict, floats: set, constants: dict, **options) -> bytes:
    """kernel's cubin for sm90: pointers name -> element type, floats fp32 scalars, other arguments i32."""
    def kind(name):
        return "constexpr" if name in constants else pointers.get(name) or ("fp32" if name in floats else "i32")
    source = ASTSource(fn=kernel, signature={name: kind(name) for name in kernel.arg_names}, constexprs=constants)
    return triton.compile(source, target=SM90, options={"num_warps": 4, **options}).asm["cubin"]


@pytest.mark.parametrize("dot, block_m, block_n, block_k", [
    (True, 16, 16, 128), (True, 16, 64, 256),  # tl.dot on rows padded to 16
    (False, 1, 4, 512), (False, 2, 16, 256), (False, 1, 1, 512)])  # a step's rows summed, down to one output
def test_the_fused_product_compiles_for_sm90(dot, block_m, block_n, block_k):
    pointers = dict.fromkeys(["X", "W", "B", "G", "R", "OUT"], "*bf16")
    for prologue in fused_linear.PROLOGUES.values():
        for extras in (True, False):  # bias and residual, or neither
            constants = dict(PROLOGUE=prologue, HAS_BIAS=extras, HAS_RESIDUAL=extras, DOT=dot, BLOCK_M=block_m,
                             BLOCK_N=block_n, BLOCK_K=block_k)
            assert compiled(fused_linear._kernel(), pointers, {"eps"}, constants, num_stages=3), constants


@pytest.mark.parametrize("one_kernel", [False, True])
def test_the_decode_attention_kernels_compile_for_sm90(one_kernel):
    split, combine = decode_attention._kernels()
    sizes = dict(ROWS=7, D=64, BLOCK_M=16, BLOCK_D=64, CHUNKS=32, BLOCK_C=32)  # a 0.5B draft step's heads
    pointers = dict(Q="*bf16", K="*bf16", V="*bf16", MASK="*u8", O="*fp32", STATS="*fp32", OUT="*bf16", COUNT="*i32")
    assert compiled(split, pointers, {"scale"}, dict(sizes, CHUNK=128, BLOCK_N=64, ONE_KERNEL=one_kernel))
    if not one_kernel:
        assert compiled(combine, pointers, set(), sizes)

