"""A decoder layer's forward through playground.engine.fused_linear: four product kernels with the
norms, the SiLU and the residual adds inside them, instead of the products plus about six small
kernels around them (opt-in: PLAYGROUND_FUSED_LAYERS=draft or both, layers and head; off by default
until an H200 times it: scripts/gpu_check.py --only fused,fusedlayers).

    x [b, n, h] -> qkv = rmsnorm(x) @ W_qkv^T + b_qkv       (kernel 1: the joined q/k/v with its norm)
                -> rotary, the cache's write, attention    (as the model's own attention module does them)
                -> mid = x + attn @ W_o^T                  (kernel 2: o with the residual)
                -> gu  = rmsnorm(mid) @ W_gate_up^T        (kernel 3: the joined gate/up with its norm)
                -> mid + (silu(g) * u) @ W_down^T          (kernel 4: down with the SiLU and the residual)
    and the output head, a product of a few rows, through the same kernel (fuse_head; on an H200 a
    0.5B draft's head took 105 us against the 65 us its 272 MB need, 2026-12-04).

For layers whose projections are joined (playground.models.fused_projections) of the Llama, Qwen2
and Mistral kinds (their attention: q/k/v, rotary, the cache, the attention function, o). A pass
of more rows than a program holds (a prefill), or off a GPU without Triton's interpreter, runs the
layer's own forward. The draft's numbers decide only its guesses; the target's are the same in
verification and in the target alone, which run the same layers."""
import sys
import types

import torch
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

from playground.engine import fused_linear
from playground.limits import env_choice
from playground.models.fused_projections import JoinedQKV

LAYERS = {"LlamaDecoderLayer", "Qwen2DecoderLayer", "MistralDecoderLayer"}


def layers_asked() -> str:
    """PLAYGROUND_FUSED_LAYERS: off (the default), draft or both; another value raises PlaygroundError."""
    return env_choice("PLAYGROUND_FUSED_LAYERS", "off", "off", "draft", "both")


def fused_models(target: torch.nn.Module, draft: torch.nn.Module | None, which: str | None = None) -> list[torch.nn.Module]:
    """The models `which` names (off, draft, both; None: PLAYGROUND_FUSED_LAYERS)."""
    which = which or layers_asked()
    return {"off": [], "draft": [draft], "both": [target, draft]}[which]


def fusable(layer: torch.nn.Module) -> bool:
    """A decoder layer of a known kind whose q/k/v and gate/up projections are joined."""
    return (type(layer).__name__ in LAYERS and isinstance(layer.self_attn.q_proj, JoinedQKV)
            and "playground_gate_up" in layer.mlp._parameters and layer.mlp.down_proj.bias is None
            and layer.self_attn.o_proj.bias is None)


def fuse_layers(model: torch.nn.Module | None) -> int:
    """Give each fusable decoder layer the fused forward (kept as `playground_forward`, which
    playground.engine.layer_regions compiles in place of the class's); -> layers given it."""
    done = 0
    for layer in (model.modules() if model is not None else []):
        if fusable(layer) and "playground_forward" not in layer.__dict__ and "forward" not in layer.__dict__:
            layer.playground_forward = fused_forward
            layer.forward = types.MethodType(fused_forward, layer)  # (eager passes; compiled: its region)
            done += 1
    return done


def fuse_model(model: torch.nn.Module | None) -> int:
    """The model's fusable layers and its head given the fused products; -> modules given them."""
    return fuse_layers(model) + fuse_head(model)


def fuse_head(model: torch.nn.Module | None) -> bool:
    """Give the model's output head (a Linear without a bias) the fused product; -> whether it was."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if not isinstance(head, torch.nn.Linear) or head.bias is not None or "forward" in head.__dict__:
        return False
    head.forward = types.MethodType(fused_head_forward, head)
    return True


def fused_head_forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
    if not fused_linear.usable(hidden_states, self.weight):  # (a prefill's logits, a CPU)
        return torch.nn.functional.linear(hidden_states, self.weight)
    return fused_linear.fused_linear_op(hidden_states, self.weight, None, "none", None, 0.0, None)


def fused_forward(self, hidden_states: torch.Tensor, attention_mask=None, position_ids=None, past_key_values=None,
                  use_cache=False, position_embeddings=None, **kwargs) -> torch.Tensor:
    attn, qkv_proj = self.self_attn, self.self_attn.q_proj
    if not fused_linear.usable(hidden_states, qkv_proj.weight):
        return type(self).forward(self, hidden_states, attention_mask=attention_mask, position_ids=position_ids,
                                  past_key_values=past_key_values, use_cache=use_cache,
                                  position_embeddings=position_embeddings, **kwargs)
    norm, post = self.input_layernorm, self.post_attention_layernorm
    qkv = fused_linear.fused_linear_op(hidden_states, qkv_proj.weight, qkv_proj.bias, "norm", norm.weight,
                                       norm.variance_epsilon, None)
    heads = (*hidden_states.shape[:-1], -1, attn.head_dim)
    q, k, v = (t.view(heads).transpose(1, 2) for t in qkv.split(qkv_proj.sizes, dim=-1))  # [b, heads, n, d]
    module = sys.modules[type(attn).__module__]  # the model's own rotary and eager attention
    cos, sin = position_embeddings
    q, k = module.apply_rotary_pos_emb(q, k, cos, sin)
    if past_key_values is not None:
        k, v = past_key_values.update(k, v, attn.layer_idx)
    attend = ALL_ATTENTION_FUNCTIONS.get_interface(attn.config._attn_implementation, module.eager_attention_forward)
    out, _ = attend(attn, q, k, v, attention_mask, dropout=0.0, scaling=attn.scaling,
                    sliding_window=getattr(attn, "sliding_window", None), **kwargs)
    out = out.reshape(*hidden_states.shape[:-1], -1)
    mid = fused_linear.fused_linear_op(out, attn.o_proj.weight, None, "none", None, 0.0, hidden_states)
    gate_up = fused_linear.fused_linear_op(mid, self.mlp.playground_gate_up, None, "norm", post.weight,
                                           post.variance_epsilon, None)
    return fused_linear.fused_linear_op(gate_up, self.mlp.down_proj.weight, None, "gated", None, 0.0, mid)
