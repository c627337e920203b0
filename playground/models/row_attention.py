"""Causal attention of a pass's query rows through row_attention.c (built into row_products' library): each row
computed alone, in one fixed order, so a row is bitwise the same in a pass of one token and of many (what
batch_invariant.row_invariant_attention needs), one call a layer instead of seven tensor operations a row and
layer. float32 CPU tensors where the library was built and passed its check; elsewhere the caller's torch way."""
import functools
import logging

import torch

from playground.models import row_products

log = logging.getLogger("playground.row_attention")


def takes(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> bool:
    """Whether attend takes these: float32 CPU tensors of one sequence, no gradient asked for (the kernel keeps none),
    the library built here and checked."""
    fits = (query.dtype == key.dtype == value.dtype == torch.float32 and query.device.type == "cpu"
            and query.shape[0] == key.shape[0] == 1 and key.shape == value.shape and query.shape[-1] == key.shape[-1]
            and query.shape[1] % key.shape[1] == 0
            and not (torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value))))
    return fits and (kernels := row_products.kernel()) is not None and _agrees(kernels)


def attend(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, scaling: float, out: torch.Tensor) -> None:
    """Causal attention of r query rows over n keys, the last r of them the rows' own positions (row i of r sees the
    first n - r + 1 + i keys): query [1, H, r, d], key and value [1, KV, n, d] -> out [1, r, H, d] (written; float32,
    contiguous). Tensors as takes() allows."""
    _attend(row_products.kernel(), query, key, value, scaling, out)


def _attend(kernels, query, key, value, scaling: float, out: torch.Tensor) -> None:
    """attend through these kernels (row_products.Kernels)."""
    _, heads, rows, d = query.shape
    if out.shape != (1, rows, heads, d) or out.dtype != torch.float32 or not out.is_contiguous():
        raise ValueError(f"attend writes a contiguous float32 [1, {rows}, {heads}, {d}], not {tuple(out.shape)}")
    keys = key.shape[-2]
    q = query[0] if query.stride(-1) == 1 else query[0].contiguous()  # [H, r, d]
    one_layout = key.stride() == value.stride() and key.stride(-1) == 1
    k, v = (key[0], value[0]) if one_layout else (key[0].contiguous(), value[0].contiguous())  # [KV, n, d] each
    seen = torch.arange(keys - rows + 1, keys + 1, dtype=torch.int64)  # [r]: the keys each row sees
    scratch = torch.empty(3, keys, dtype=torch.float32)  # up to three heads' scores, then weights
    kernels.attention(q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), scratch.data_ptr(),
                      seen.data_ptr(), heads, heads // k.shape[0], rows, d, q.stride(0), q.stride(1), k.stride(0),
                      k.stride(1), scaling)


@functools.lru_cache(maxsize=4)
def _agrees(kernels) -> bool:
    """A check of the build (once per library loaded): rows of a wide pass bitwise those of one-row passes over
    contiguous copies, and near softmax(q k^T * scale) v in double precision; seven heads to a key/value head (blocks
    of three and one), a head size past 64 lanes and the eights, query rows strided as transformers gives them."""
    gen = torch.Generator().manual_seed(0)
    query = torch.randn(1, 5, 7, 72, generator=gen).transpose(1, 2)  # [1, H, r, d], strided
    key, value = (torch.randn(1, 1, 40, 72, generator=gen) for _ in range(2))
    wide = torch.empty(1, 5, 7, 72)
    _attend(kernels, query, key, value, 0.3, wide)
    for row in range(5):
        seen = 40 - 5 + row + 1
        one = torch.empty(1, 1, 7, 72)
        _attend(kernels, query[:, :, row:row + 1].contiguous(), key[:, :, :seen].contiguous(),
                value[:, :, :seen].contiguous(), 0.3, one)
        k, v = key[0, 0, :seen].double(), value[0, 0, :seen].double()  # [seen, d]
        expected = torch.softmax(query[0, :, row].double() @ k.T * 0.3, dim=-1) @ v  # [H, d]
        if not torch.equal(one[0, 0], wide[0, row]) or not torch.allclose(wide[0, row].double(), expected, atol=1e-5):
            log.warning("float32 attention kernel failed its check; the attention's rows are taken by torch operations")
            return False
    return True
