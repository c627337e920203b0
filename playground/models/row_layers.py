"""A float32 model's decoder layers of the Llama kind (Llama, Qwen2, Qwen3, Mistral) in two C calls a layer around
their attention (row_layer.c, built into row_products' library), where every linear layer of theirs goes through
row_products' kernel: the norms, the products (q/k/v joined into one, gate/up into another), the rotary, the SiLU
and the residual adds, each row alone in one fixed order, so a row is bitwise the same in a pass of one token and of
many, as before. The attention between stays the model's (batch_invariant.row_invariant_attention: a run's first
pass batched, a tree's runs), and so does the KV cache.

Why: in a float32 pass through the kernel, what ran around the products (transformers' layer: some twenty tensor
operations and seven products' calls from Python a layer) took about a third of it: SmolLM2-135M, one token after
100, one thread, 2-core Intel Xeon: 41-44 ms a pass, 26 of them products (BENCHMARKS.md has the figures since).

The joined weights replace the separate ones, which become views of them (no second copy: the modules still work,
for plain_kernels and the layer's own forward). A pass the C layer does not take (another dtype, a batch of more than
one sequence, gradients asked for) runs the layer's own forward; batch_invariant.plain_kernels takes the C one away
while it runs the model as transformers would. The C layer calls neither the attention module nor the MLP as modules:
hooks on them do not fire (nothing here sets one)."""
import functools
import logging
from dataclasses import dataclass

import torch
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

from playground.limits import env_flag
from playground.models import row_products
from playground.models.fused_projections import ATTENTIONS, MLPS

LAYERS = {"LlamaDecoderLayer", "Qwen2DecoderLayer", "Qwen3DecoderLayer", "MistralDecoderLayer"}  # (their attention
# and MLP kinds: fused_projections')
log = logging.getLogger("playground.row_layers")

ATTR = "playground_row_layer"  # a layer's Joined, in its __dict__


@dataclass(frozen=True, eq=False)
class Joined:
    """A layer's joined weights ([N, in], float32 or bfloat16, contiguous) and biases (float32 or None), its sizes."""
    qkv: torch.Tensor  # [(H + 2 KV) d, D]
    qkv_bias: torch.Tensor | None
    gate_up: torch.Tensor  # [2 I, D]
    gate_up_bias: torch.Tensor | None
    heads: int
    kv_heads: int
    attention: str  # the attention implementation the model was loaded with (batch_invariant.ROW_INVARIANT)


def install(model: torch.nn.Module) -> int:
    """Give every layer the C layer takes (takes_layer) joined weights and the C forward; -> layers given them (none
    where PLAYGROUND_ROW_LAYERS=0: transformers' layers around the kernel's products, as before, to compare)."""
    if not asked() or (kernels := row_products.kernel()) is None or not _agrees(kernels):
        return 0
    done = 0
    for layer in list(model.modules()):
        if takes_layer(layer):
            _join(layer, model.config._attn_implementation)
            layer.forward = functools.partial(forward, layer)
            done += 1
    return done


def asked() -> bool:
    """PLAYGROUND_ROW_LAYERS: on unless 0 (a value neither on nor off raises PlaygroundError)."""
    return env_flag("PLAYGROUND_ROW_LAYERS", True)


def uninstalled(layer: torch.nn.Module) -> bool:
    return ATTR not in layer.__dict__


def takes_layer(layer: torch.nn.Module) -> bool:
    """A decoder layer of a known kind, not given the C forward yet, its seven linear layers through row_products'
    kernel (q/k/v of one weight dtype, gate/up of one), float32 RMS norms, SiLU, no sliding window, an even head size."""
    if type(layer).__name__ not in LAYERS or not uninstalled(layer) or "forward" in layer.__dict__:
        return False
    attn, mlp = layer.self_attn, layer.mlp
    if type(attn).__name__ not in ATTENTIONS or type(mlp).__name__ not in MLPS:
        return False
    linears = [attn.q_proj, attn.k_proj, attn.v_proj, attn.o_proj, mlp.gate_proj, mlp.up_proj, mlp.down_proj]
    norms = [layer.input_layernorm, layer.post_attention_layernorm, *_head_norms(attn)]
    return (all(_served(m) for m in linears)
            and len({attn.q_proj.weight.dtype, attn.k_proj.weight.dtype, attn.v_proj.weight.dtype}) == 1
            and mlp.gate_proj.weight.dtype == mlp.up_proj.weight.dtype
            and len({m.bias is None for m in (attn.q_proj, attn.k_proj, attn.v_proj)}) == 1
            and (mlp.gate_proj.bias is None) == (mlp.up_proj.bias is None)
            and all(_rms_norm(n) for n in norms) and len(_head_norms(attn)) in (0, 2)
            and len({n.variance_epsilon for n in _head_norms(attn)}) <= 1  # (one epsilon for both in the C call)
            and type(mlp.act_fn).__name__ in ("SiLU", "SiLUActivation") and not _windowed(attn)
            and attn.head_dim % 2 == 0)


def _windowed(attn) -> bool:
    """Whether the layer attends over a sliding window (Qwen2's where its config asks, Mistral's from its config): the
    row-invariant attention does not take one, and neither do these layers."""
    window = attn.sliding_window if hasattr(attn, "sliding_window") else getattr(attn.config, "sliding_window", None)
    return window is not None


def _served(module) -> bool:
    """A linear layer whose products go through row_products' kernel (batch_invariant patched it so)."""
    forward = module.__dict__.get("forward") if isinstance(module, torch.nn.Linear) else None
    return getattr(forward, "func", None) is row_products.module_forward and module.weight.is_contiguous() and (
        module.bias is None or module.bias.dtype == torch.float32)


def _rms_norm(norm) -> bool:
    return (type(norm).__name__.endswith("RMSNorm") and hasattr(norm, "variance_epsilon")
            and norm.weight.dtype == torch.float32 and norm.weight.dim() == 1)


def _head_norms(attn) -> list:
    """Qwen3's per-head norms of the queries and keys (none for the other kinds)."""
    return [n for n in (getattr(attn, "q_norm", None), getattr(attn, "k_norm", None)) if n is not None]


def _join(layer, attention: str) -> None:
    """Join q/k/v and gate/up into one weight each; the modules' weights become views of it (no second copy)."""
    attn, mlp = layer.self_attn, layer.mlp
    qkv, gate_up = [attn.q_proj, attn.k_proj, attn.v_proj], [mlp.gate_proj, mlp.up_proj]
    layer.__dict__[ATTR] = Joined(_joined(qkv, "weight"), _joined(qkv, "bias"), _joined(gate_up, "weight"),
                                  _joined(gate_up, "bias"), attn.q_proj.out_features // attn.head_dim,
                                  attn.k_proj.out_features // attn.head_dim, attention)


def _joined(modules: list, name: str) -> torch.Tensor | None:
    """The modules' `name` tensors (weight [out, in] or bias [out]) joined into one along out, each module's now a view
    of it; None where they have no bias."""
    if getattr(modules[0], name) is None:
        return None
    joined = torch.cat([getattr(m, name).detach() for m in modules])
    start = 0
    for m in modules:
        setattr(m, name, torch.nn.Parameter(joined[start:start + m.out_features], requires_grad=False))
        start += m.out_features
    return joined


def forward(layer, hidden_states: torch.Tensor, attention_mask=None, position_ids=None, past_key_values=None,
            use_cache=False, position_embeddings=None, **kwargs) -> torch.Tensor:
    """The decoder layer's forward (as its class's: hidden_states [1, M, D] -> [1, M, D]) through row_layer.c."""
    joined: Joined = layer.__dict__[ATTR]
    if not _takes(layer, joined, hidden_states, position_embeddings):
        return type(layer).forward(layer, hidden_states, attention_mask=attention_mask, position_ids=position_ids,
                                   past_key_values=past_key_values, use_cache=use_cache,
                                   position_embeddings=position_embeddings, **kwargs)
    attn, mlp, kernels = layer.self_attn, layer.mlp, row_products.kernel()
    rows, width = hidden_states.shape[1], hidden_states.shape[2]
    x = hidden_states.reshape(rows, width).contiguous()  # [M, D]
    cos, sin = (t.reshape(rows, -1).contiguous() for t in position_embeddings)  # [M, d] each
    heads, kv_heads, d = joined.heads, joined.kv_heads, attn.head_dim
    norms = _head_norms(attn)  # Qwen3's q_norm, k_norm, or none
    q_norm, k_norm = (n.weight for n in norms) if norms else (None, None)
    qkv = first_half(kernels, x, layer.input_layernorm.weight, layer.input_layernorm.variance_epsilon, joined.qkv,
                     joined.qkv_bias, q_norm, k_norm, norms[0].variance_epsilon if norms else 0.0, cos, sin, heads,
                     kv_heads)  # [M, (H + 2 KV) d]
    q, k, v = (part.view(1, rows, -1, d).transpose(1, 2)  # [1, heads, M, d] each
               for part in qkv.split([heads * d, kv_heads * d, kv_heads * d], dim=1))
    if past_key_values is not None:
        k, v = past_key_values.update(k, v, attn.layer_idx)
    attention = ALL_ATTENTION_FUNCTIONS[joined.attention]
    attended, _ = attention(attn, q, k, v, attention_mask, dropout=0.0, scaling=attn.scaling, **kwargs)  # [1, M, H, d]
    out = second_half(kernels, x, attended.reshape(rows, heads * d).contiguous(), attn.o_proj.weight, attn.o_proj.bias,
                      layer.post_attention_layernorm.weight, layer.post_attention_layernorm.variance_epsilon,
                      joined.gate_up, joined.gate_up_bias, mlp.down_proj.weight, mlp.down_proj.bias)
    return out.view(1, rows, width)


def first_half(kernels, x, norm, eps, w_qkv, b_qkv, q_norm, k_norm, head_eps, cos, sin, heads: int, kv_heads: int):
    """row_layer_in: x [M, D] -> q | k | v [M, (H + 2 KV) d], the heads normed (q_norm, k_norm [d]: Qwen3's; None:
    none) and rotated by cos, sin [M, d]; every tensor float32 and contiguous but w_qkv [(H + 2 KV) d, D] (float32 or
    bfloat16) and the bias [(H + 2 KV) d] (or None)."""
    (rows, width), d = x.shape, cos.shape[1]
    if w_qkv.shape != ((heads + 2 * kv_heads) * d, width) or not cos.shape == sin.shape == (rows, d) or norm.shape != (width,):
        raise ValueError(f"row_layer_in: shapes {tuple(x.shape)}, {tuple(w_qkv.shape)}, {tuple(cos.shape)} do not agree")
    h, qkv = _floats(rows, width), _floats(rows, w_qkv.shape[0])
    kernels.layer_in(x.data_ptr(), norm.data_ptr(), eps, w_qkv.data_ptr(), _half(w_qkv), _ptr(b_qkv), _ptr(q_norm),
                     _ptr(k_norm), head_eps, cos.data_ptr(), sin.data_ptr(), h.data_ptr(), qkv.data_ptr(), rows, width,
                     heads, kv_heads, d, torch.get_num_threads())
    return qkv


def second_half(kernels, x, attended, w_o, b_o, norm, eps, w_gu, b_gu, w_down, b_down):
    """row_layer_out: x [M, D] and the attention's rows attended [M, A] -> the layer's output [M, D]; weights w_o
    [D, A], w_gu [2 I, D] (gate | up), w_down [D, I] float32 or bfloat16, biases float32 or None."""
    (rows, width), inner, intermediate = x.shape, attended.shape[1], w_gu.shape[0] // 2
    if (attended.shape[0] != rows or w_o.shape != (width, inner) or w_gu.shape != (2 * intermediate, width)
            or w_down.shape != (width, intermediate) or norm.shape != (width,)):
        raise ValueError(f"row_layer_out: shapes {tuple(x.shape)}, {tuple(attended.shape)}, {tuple(w_gu.shape)} do not agree")
    h, gu, act, out = _floats(rows, width), _floats(rows, 2 * intermediate), _floats(rows, intermediate), _floats(rows, width)
    kernels.layer_out(x.data_ptr(), attended.data_ptr(), w_o.data_ptr(), _half(w_o), _ptr(b_o), norm.data_ptr(), eps,
                      w_gu.data_ptr(), _half(w_gu), _ptr(b_gu), w_down.data_ptr(), _half(w_down), _ptr(b_down),
                      h.data_ptr(), gu.data_ptr(), act.data_ptr(), out.data_ptr(), rows, width, inner, intermediate,
                      torch.get_num_threads())
    return out


def _takes(layer, joined: Joined, hidden_states: torch.Tensor, position_embeddings) -> bool:
    """Whether the C layer takes this pass: the modules' weights still views of the joined ones, float32 rows of one
    sequence on the CPU, cos and sin [1, M, d] float32, no gradient asked for (batch_invariant.plain_kernels takes the
    C forward away while it sets another attention)."""
    attn = layer.self_attn
    return (attn.q_proj.weight.data_ptr() == joined.qkv.data_ptr()  # (still views: not after a deepcopy, a .to())
            and hidden_states.dtype == torch.float32 and hidden_states.device.type == "cpu" and hidden_states.dim() == 3
            and hidden_states.shape[0] == 1 and hidden_states.shape[1] > 0 and position_embeddings is not None
            and all(t.dtype == torch.float32 and t.shape == (1, hidden_states.shape[1], attn.head_dim)
                    for t in position_embeddings)
            and not (torch.is_grad_enabled() and hidden_states.requires_grad) and row_products.kernel() is not None)


def _floats(*shape: int) -> torch.Tensor:
    """An empty float32 buffer the C code writes (float32 whatever torch's default dtype: a load elsewhere sets it to
    the dtype it loads for a while, and a pass beside it wrote four bytes an element into two: heap corruption)."""
    return torch.empty(shape, dtype=torch.float32)


def _half(weight: torch.Tensor) -> int:
    return int(weight.dtype == torch.bfloat16)


def _ptr(tensor: torch.Tensor | None) -> int | None:
    return None if tensor is None else tensor.data_ptr()


@functools.lru_cache(maxsize=4)
def _agrees(kernels) -> bool:
    """A check of the build (once per library loaded): both halves on three rows give each row bitwise as alone, and
    near the same layer in double precision: widths past the eights (D 20, d 10, I 12), two query heads to a key/value
    head, biases, head norms, gate/up from bfloat16."""
    gen = torch.Generator().manual_seed(0)
    D, H, KV, d, I = 20, 2, 1, 10, 12
    x, attended, angle = (torch.randn(3, n, generator=gen) for n in (D, H * d, d))
    norm, norm2, q_norm, k_norm = (1 + 0.1 * torch.randn(n, generator=gen) for n in (D, D, d, d))
    w_qkv, w_o, w_down = (torch.randn(shape, generator=gen) for shape in (((H + 2 * KV) * d, D), (D, H * d), (D, I)))
    b_qkv, w_gu = torch.randn((H + 2 * KV) * d, generator=gen), torch.randn(2 * I, D, generator=gen).bfloat16()
    cos, sin = angle.cos(), angle.sin()

    def halves(i: slice):
        qkv = first_half(kernels, x[i], norm, 1e-6, w_qkv, b_qkv, q_norm, k_norm, 1e-6, cos[i], sin[i], H, KV)
        return qkv, second_half(kernels, x[i], attended[i], w_o, None, norm2, 1e-5, w_gu, None, w_down, None)

    wide = halves(slice(0, 3))
    ones = [torch.cat(parts) for parts in zip(*(halves(slice(r, r + 1)) for r in range(3)))]
    near = all(torch.allclose(got.double(), want, rtol=1e-4, atol=1e-4) for got, want in zip(wide, _in_double(
        x, attended, norm, norm2, q_norm, k_norm, w_qkv, b_qkv, w_o, w_gu, w_down, cos, sin, H, KV)))
    ok = near and all(torch.equal(a, b) for a, b in zip(wide, ones))
    if not ok:
        log.warning("row_layer.c failed its check; transformers' layers run around the kernel's products")
    return ok


def _in_double(x, attended, norm, norm2, q_norm, k_norm, w_qkv, b_qkv, w_o, w_gu, w_down, cos, sin, heads, kv_heads):
    """What first_half and second_half compute, in double precision, as transformers' layers do it."""
    x, attended, norm, norm2, q_norm, k_norm, w_qkv, b_qkv, w_o, w_gu, w_down, cos, sin = (
        t.double() for t in (x, attended, norm, norm2, q_norm, k_norm, w_qkv, b_qkv, w_o, w_gu, w_down, cos, sin))
    rows, d = cos.shape

    def rms(v, weight, eps):
        return weight * (v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + eps))

    def rotated(v):  # [rows, n, d]
        return v * cos[:, None] + torch.cat([-v[..., d // 2:], v[..., :d // 2]], -1) * sin[:, None]

    qkv = rms(x, norm, 1e-6) @ w_qkv.T + b_qkv
    q, k = (rotated(rms(part.reshape(rows, -1, d), weight, 1e-6)).reshape(rows, -1)
            for part, weight in ((qkv[:, :heads * d], q_norm), (qkv[:, heads * d:(heads + kv_heads) * d], k_norm)))
    mid = x + attended @ w_o.T
    gate, up = (rms(mid, norm2, 1e-5) @ w_gu.T).chunk(2, dim=-1)
    return torch.cat([q, k, qkv[:, (heads + kv_heads) * d:]], dim=1), mid + (torch.nn.functional.silu(gate) * up) @ w_down.T
