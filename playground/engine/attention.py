"""Grouped-query attention on a static cache without copying the cache for every query head.

A static cache's passes attend through a mask, and with a mask transformers' SDPA path repeats each
key/value head for its g query heads (`repeat_kv`) when compiled: per layer and pass a copy of the
whole cache, g times over (Qwen2.5-7B: g = 7, 28 layers, 4,096 positions: ~1.6 GB written and
read again per pass, about a third of the weights' own traffic). Here the g query heads that share a
key/value head are folded into the query axis instead:

    query [b, Hkv * g, n, d] -> [b, Hkv, g * n, d]     (head h = kv * g + j, as repeat_kv pairs them)
    mask  [b, 1, n, L]       -> [b, 1, g * n, L]       (the same n rows for each of the g heads)
    out   [b, Hkv, g * n, d] -> [b, n, Hkv * g, d]

one SDPA call over the cache as it is. Each query row still sees the same keys, values and mask
row, so the result is the same attention (summed in the same order per row on a CPU, measured in
tests/test_attention.py). Without a mask (a causal prefill) or without grouping, transformers'
own SDPA runs unchanged. On a GPU every model folds (PLAYGROUND_FOLD_GQA=0: not): at its load
(playground.session.load_pair), else at its first compile; scripts/gpu_check.py times both ways at
real shapes."""
import os

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

NAME = "playground_folded_sdpa"


def folded_sdpa(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
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
    mask = attention_mask[..., :length].expand(b, 1, n, length).repeat(1, 1, groups, 1)  # [b, 1, g n, L]
    out = torch.nn.functional.scaled_dot_product_attention(folded, key, value, attn_mask=mask, scale=scaling)
    return out.reshape(b, heads, n, value.shape[-1]).transpose(1, 2).contiguous(), None


def folds_on(device: torch.device) -> bool:
    """Whether static-cache models on this device attend through folded_sdpa."""
    return device.type == "cuda" and os.environ.get("PLAYGROUND_FOLD_GQA", "1") != "0"


def fold_grouped_heads(model: torch.nn.Module) -> bool:
    """Make the model attend through folded_sdpa where it runs SDPA with grouped heads; -> whether it does.
    (A module that is not a transformers model, such as a feature draft, keeps its attention.)"""
    if not hasattr(model, "set_attn_implementation"):
        return False
    text = model.config.get_text_config(decoder=True)
    heads, kv_heads = text.num_attention_heads, getattr(text, "num_key_value_heads", None) or text.num_attention_heads
    if heads == kv_heads or model.config._attn_implementation not in ("sdpa", NAME):
        return False
    AttentionInterface.register(NAME, folded_sdpa)
    AttentionMaskInterface.register(NAME, ALL_MASK_ATTENTION_FUNCTIONS["sdpa"])  # the masks SDPA gets
    model.set_attn_implementation(NAME)
    return True
