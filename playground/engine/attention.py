"""Grouped-query attention on a static cache without copying the cache for every query head.

A static cache's passes attend through a mask, and with a mask transformers' SDPA path repeats each
key/value head for its g query heads (`repeat_kv`) when compiled: per layer and pass a copy of the
whole cache, g times over (Qwen2.5-7B: g = 7, 28 layers, 4,096 positions: ~1.6 GB written and
read again per pass, about a third of the weights' own traffic). Here the g query heads that share a
key/value head are folded into the query axis instead:

    query [b, Hkv * g, n, d] -> [b, Hkv, g * n, d]     (head h = kv * g + j, as repeat_kv pairs them)
    mask  [b, 1, n, L]       -> [b, 1, g * n, L]       (the same n rows for each of the g heads)
    out   [b, Hkv, g * n, d] -> [b, n, Hkv * g, d]

attention over the cache as it is. Each query row still sees the same keys, values and mask row, so
the result is the same attention (measured in tests/test_attention.py). Without a mask (a causal
prefill) or without grouping, transformers' own SDPA runs unchanged. On a GPU every model folds
(PLAYGROUND_FOLD_GQA=0: not): at its load (playground.session.load_pair), else at its first compile.

The folded attention is two batched matrix products with the softmax in float32 (what
transformers' eager attention computes), not SDPA's kernel: with a mask SDPA takes its
memory-efficient kernel, which has no split over the keys: one block per (batch, head, query block)
walks the whole cache, so a one-token pass can keep only a few of an H200's 132 multiprocessors busy
(our reading of the timings below, not profiled). On an H200 (2026-11-26,
scripts/gpu_check.py, each pass's layers replayed as one CUDA graph, 4,096 positions), one pass's
attention over all layers: Qwen2.5-7B one token 2.50 ms repeated, 2.52 folded SDPA, 0.70 folded
matrix products; 5 tokens 4.47 / 2.62 / 0.83; Qwen2.5-0.5B one token 0.74 / 1.64 / 0.57. The
compiled 7B target alone went from 7.85 to 5.54 ms a token. PLAYGROUND_GQA_ATTENTION=sdpa folds
into SDPA's kernel instead; PLAYGROUND_GQA_ATTENTION=triton into two Triton kernels that read only
the positions the mask allows (playground.engine.decode_attention; on an H200 no faster within a round, hence opt-in)."""

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

from playground.engine import decode_attention
from playground.limits import env_choice, env_flag

NAME = "playground_folded_gqa"
WAY = env_choice("PLAYGROUND_GQA_ATTENTION", "matmul", "matmul", "sdpa", "triton")  # (see above)


def folded_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                attention_mask: torch.Tensor | None, dropout: float = 0.0, scaling: float | None = None,
                **kwargs) -> tuple[torch.Tensor, None]:
    groups = getattr(module, "num_key_value_groups", 1)
    plain = groups == 1 or attention_mask is None or attention_mask.shape[1] != 1 or dropout
    if plain or kwargs.get("position_bias") is not None or kwargs.get("softcap") is not None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)
    b, heads, n, d = query.shape
    kv_heads, length = key.shape[1], key.shape[2]
    folded = query.reshape(b, kv_heads, groups * n, d)
    rows = attention_mask[..., :length].expand(b, 1, n, length)  # [b, 1, n, L]
    if WAY == "triton" and decode_attention.usable(folded, value, rows):
        out = decode_attention.decode_attention(folded, key, value, rows, d ** -0.5 if scaling is None else scaling)
    else:
        mask = rows.repeat(1, 1, groups, 1)  # [b, 1, g n, L]
        out = (torch.nn.functional.scaled_dot_product_attention if WAY == "sdpa" else matmul_attention)(
            folded, key, value, attn_mask=mask, scale=scaling)
    return out.reshape(b, heads, n, value.shape[-1]).transpose(1, 2).contiguous(), None


def matmul_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attn_mask: torch.Tensor,
                     scale: float | None = None) -> torch.Tensor:
    """softmax(q k^T * scale + mask) v as two batched matrix products, as transformers' eager
    attention computes it (q k^T in the model's dtype, accumulated in float32 by the GEMM; scale,
    mask and softmax in float32):
    query [b, h, m, d], key/value [b, h, L, d], attn_mask [b, 1, m, L] (bool: True attends, or additive)."""
    scale = query.shape[-1] ** -0.5 if scale is None else scale
    scores = torch.matmul(query, key.transpose(-1, -2)).float() * scale  # [b, h, m, L]
    if attn_mask.dtype == torch.bool:
        scores = scores.masked_fill(~attn_mask, torch.finfo(torch.float32).min)
    else:
        scores = scores + attn_mask
    return torch.matmul(torch.softmax(scores, dim=-1).to(value.dtype), value)


def folds_on(device: torch.device) -> bool:
    """Whether static-cache models on this device attend through folded_attention."""
    return device.type == "cuda" and env_flag("PLAYGROUND_FOLD_GQA", True)


def fold_grouped_heads(model: torch.nn.Module) -> bool:
    """Make the model attend through folded_attention where it runs SDPA with grouped heads; -> whether it does.
    (A module that is not a transformers model, such as a feature draft, keeps its attention.)"""
    if not hasattr(model, "set_attn_implementation"):
        return False
    text = model.config.get_text_config(decoder=True)
    heads, kv_heads = text.num_attention_heads, getattr(text, "num_key_value_heads", None) or text.num_attention_heads
    if heads == kv_heads or model.config._attn_implementation not in ("sdpa", NAME):
        return False
    AttentionInterface.register(NAME, folded_attention)
    AttentionMaskInterface.register(NAME, ALL_MASK_ATTENTION_FUNCTIONS["sdpa"])  # the masks SDPA gets
    model.set_attn_implementation(NAME)
    return True
