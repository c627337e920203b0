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
while it runs the model as transformers would."""
import functools
from dataclasses import dataclass

import torch
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

from playground.limits import env_flag
from playground.models import row_products
from playground.models.fused_projections import ATTENTIONS, MLPS

LAYERS = {"LlamaDecoderLayer", "Qwen2DecoderLayer", "Qwen3DecoderLayer", "MistralDecoderLayer"}  # (their attention
# and MLP kinds: fused_projections')
ATTR = "playground_row_layer"  # a layer's Joined, in its __dict__


@dataclass(frozen=True)
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
    if not asked():
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
            and type(mlp.act_fn).__name__ in ("SiLU", "SiLUActivation")
            and getattr(attn, "sliding_window", None) is None and attn.head_dim % 2 == 0)


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
    qkv = _joined_weight([attn.q_proj, attn.k_proj, attn.v_proj])
    gate_up = _joined_weight([mlp.gate_proj, mlp.up_proj])
    layer.__dict__[ATTR] = Joined(qkv, _joined_bias([attn.q_proj, attn.k_proj, attn.v_proj]), gate_up,
                                  _joined_bias([mlp.gate_proj, mlp.up_proj]),
                                  attn.q_proj.out_features // attn.head_dim, attn.k_proj.out_features // attn.head_dim,
                                  attention)


def _joined_weight(modules: list) -> torch.Tensor:
    joined = torch.cat([m.weight.detach() for m in modules])  # [sum of out, in]
    start = 0
    for m in modules:
        m.weight = torch.nn.Parameter(joined[start:start + m.out_features], requires_grad=False)
        start += m.out_features
    return joined


def _joined_bias(modules: list) -> torch.Tensor | None:
    if modules[0].bias is None:
        return None
    joined = torch.cat([m.bias.detach().float() for m in modules])
    start = 0
    for m in modules:
        m.bias = torch.nn.Parameter(joined[start:start + m.out_features], requires_grad=False)
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
    h, qkv = torch.empty(rows, width), torch.empty(rows, (heads + 2 * kv_heads) * d)
    q_norm, k_norm = (_head_norms(attn) or [None, None])
    threads = torch.get_num_threads()
    kernels.layer_in(x.data_ptr(), layer.input_layernorm.weight.data_ptr(), layer.input_layernorm.variance_epsilon,
                     joined.qkv.data_ptr(), _half(joined.qkv), _ptr(joined.qkv_bias), _ptr(q_norm and q_norm.weight),
                     _ptr(k_norm and k_norm.weight), q_norm.variance_epsilon if q_norm is not None else 0.0,
                     cos.data_ptr(), sin.data_ptr(), h.data_ptr(), qkv.data_ptr(), rows, width, heads, kv_heads, d,
                     threads)
    q, k, v = (part.view(1, rows, -1, d).transpose(1, 2)  # [1, heads, M, d] each
               for part in qkv.split([heads * d, kv_heads * d, kv_heads * d], dim=1))
    if past_key_values is not None:
        k, v = past_key_values.update(k, v, attn.layer_idx)
    attention = ALL_ATTENTION_FUNCTIONS[joined.attention]
    attended, _ = attention(attn, q, k, v, attention_mask, dropout=0.0, scaling=attn.scaling, **kwargs)  # [1, M, H, d]
    attended = attended.reshape(rows, heads * d).contiguous()
    intermediate = joined.gate_up.shape[0] // 2
    gu, act, out = torch.empty(rows, 2 * intermediate), torch.empty(rows, intermediate), torch.empty(rows, width)
    kernels.layer_out(x.data_ptr(), attended.data_ptr(), attn.o_proj.weight.data_ptr(), _half(attn.o_proj.weight),
                      _ptr(attn.o_proj.bias), layer.post_attention_layernorm.weight.data_ptr(),
                      layer.post_attention_layernorm.variance_epsilon, joined.gate_up.data_ptr(), _half(joined.gate_up),
                      _ptr(joined.gate_up_bias), mlp.down_proj.weight.data_ptr(), _half(mlp.down_proj.weight),
                      _ptr(mlp.down_proj.bias), h.data_ptr(), gu.data_ptr(), act.data_ptr(), out.data_ptr(), rows,
                      width, heads * d, intermediate, threads)
    return out.view(1, rows, width)


def _takes(layer, joined: Joined, hidden_states: torch.Tensor, position_embeddings) -> bool:
    """Whether the C layer takes this pass: float32 rows of one sequence on the CPU, cos and sin [1, M, d] float32, no
    gradient asked for (batch_invariant.plain_kernels takes the C forward away while it sets another attention)."""
    attn = layer.self_attn
    return (hidden_states.dtype == torch.float32 and hidden_states.device.type == "cpu" and hidden_states.dim() == 3
            and hidden_states.shape[0] == 1 and hidden_states.shape[1] > 0 and position_embeddings is not None
            and all(t.dtype == torch.float32 and t.shape == (1, hidden_states.shape[1], attn.head_dim)
                    for t in position_embeddings)
            and not (torch.is_grad_enabled() and hidden_states.requires_grad) and row_products.kernel() is not None)


def _half(weight: torch.Tensor) -> int:
    return int(weight.dtype == torch.bfloat16)


def _ptr(tensor: torch.Tensor | None) -> int | None:
    return None if tensor is None else tensor.data_ptr()
