"""A draft that reads the target's features (EAGLE-style): instead of guessing the next token from
the tokens alone, it extends the target's own last hidden state one position at a time.

One draft step, at the pair for token x_i (position i-1 of the draft's cache):

    h = fc([f_{i-1} ; E x_i])         f_{i-1}: the target's last hidden state (after its final norm)
                                      at position i-1 [H]; E: the target's input embedding [H]
    f'_i = decoder(h | cached pairs)  a small Llama decoder (one layer) with its own KV cache
    logits(x_{i+1}) = W f'_i          W: the target's output head, rows of the draft vocabulary

While the target's f_{i-1} is known (every committed position but the last) the draft reads it; for
the positions it drafts itself it reads its own prediction f'_{i-1}. Only the decoder, its norm and
fc ship (a few MB): E and W are the target's, attached at load time, so the draft works only with
the target it was trained on (same hidden size and tokenizer). The acceptance rule does not depend
on how the draft computes its distribution, so speculation stays exact."""
import functools
import json
import pathlib

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from transformers import LlamaConfig, LlamaModel
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from playground.models import row_layers, row_products
from playground.models.packed_linear import linear, pack, pack_linears

MARKER = "playground_feature_draft"  # key in config.json that marks such a draft
VOCAB_MAP_FILE = "draft_vocab.safetensors"  # d2t [N - 1]: the token ids of the head's rows


class FeatureDraft(torch.nn.Module):
    """fc + a Llama decoder over inputs_embeds; `attach` gives it the target's embedding and head."""

    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.config = config
        h = config.hidden_size
        self.fc = torch.nn.Linear(2 * h, h, bias=True)
        self.model = LlamaModel(config)  # its own embedding table is unused (vocab_size 1)
        self.target_embedding = None  # set by attach (not a submodule: the target owns it)
        self.register_buffer("head", torch.empty(0, h), persistent=False)  # [N - 1, H] rows of W
        self.packed_head = None  # the head packed for oneDNN (see pack)
        self.head_by_kernel = False  # the head's products through row_products' kernel (see by_row_kernel)

    @property
    def device(self) -> torch.device:
        return self.fc.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.model.norm.weight.dtype  # (not a linear layer's: one may be held in bfloat16, by_row_kernel)

    def attach(self, target: torch.nn.Module, d2t: torch.Tensor) -> "FeatureDraft":
        """Use the target's input embedding and the rows d2t of its output head."""
        head = target.get_output_embeddings().weight.detach()
        self.__dict__["target_embedding"] = target.get_input_embeddings()
        self.head = head[d2t.to(head.device)].to(self.dtype).clone()
        return self

    def step(self, ids: torch.Tensor, features: torch.Tensor, cache, keep: int = 0, **tree):
        """ids [n] tokens x_i.., features [n, H] f_{i-1}.. -> (predicted features [n, H], logits of
        the last `keep` positions over the draft vocabulary [keep, N - 1]; all n when keep is 0).
        tree: position_ids and attention_mask of a token tree's pass."""
        embedded = self.target_embedding(ids).to(self.dtype)  # [n, H]
        h = self.fc(torch.cat([features.to(self.dtype), embedded], dim=-1))[None]  # [1, n, H]
        out = self.model(inputs_embeds=h, past_key_values=cache, use_cache=True, **tree).last_hidden_state[0]
        return out, self.logits(out[-keep:] if keep else out)

    def logits(self, features: torch.Tensor) -> torch.Tensor:
        if self.head_by_kernel:
            return row_products.linear(features, self.head, None)  # [n, N - 1]
        return linear(features, self.head, None, self.packed_head)  # [n, N - 1]

    def pack(self) -> "FeatureDraft":
        """Pack its products' weights for oneDNN where it is a bfloat16 CPU model (after attach)."""
        pack_linears(self)
        self.packed_head = pack(self.head)
        return self

    def by_row_kernel(self, threads: int | None) -> bool:
        """Its products, the head's too, through row_products' kernel where that is clearly faster here than F.linear
        on its decode threads (threads; None: all) (a float32 CPU draft, after attach; its rows need not be exact:
        speculation is exact whatever it drafts) -> whether they are. Their weights are then held in bfloat16 where that
        keeps every value (row_products.hold_halved: the shipped feature draft is a bfloat16 file), and its decoder layer
        runs as two C calls (row_layers: a step 3.5-3.8 -> 2.9-3.3 ms, SmolLM2's draft, 2-core AMD EPYC)."""
        linears = [m for m in self.modules() if isinstance(m, torch.nn.Linear)]
        if not row_products.faster_than_plain([m.weight for m in linears] + [self.head], threads):
            return False
        for module in linears:
            module.forward = functools.partial(row_products.module_forward, module)
            row_products.hold_halved(module)
        row_layers.install(self.model)
        if (half := row_products.halved(self.head)) is not None:
            self.head = half
        self.head_by_kernel = True
        return True


def unrolled(draft: FeatureDraft, ids: torch.Tensor, features: torch.Tensor, depth: int) -> list[torch.Tensor]:
    """`depth` drafting steps at every position at once, as training sees them (EAGLE-3's
    training-time test). ids [B, T]: x_{j+1}; features [B, T, H]: the target's f_j (pair j).
    -> outputs o^s [B, T, H] for s = 1..depth: o^s_j predicts f_{j+1} as the s-th drafted step does
    when the exact prefix ends at pair j-s+1, so it reads o^{s-1}_{j-1} (its own previous guess) and
    attends to exact pairs <= j-s+1 and to the guessed pairs after them (step m at position j-s+m).
    Rows j < s-1 have no such prefix: they are computed but mean nothing."""
    if len(draft.model.layers) != 1:
        raise ValueError("unrolled computes one-layer drafts only")
    layer, attn = draft.model.layers[0], draft.model.layers[0].self_attn
    b, t, _ = features.shape
    position = torch.arange(t, device=features.device)
    cos, sin = draft.model.rotary_emb(features, position[None].expand(b, t))
    embedded = draft.target_embedding(ids).to(features.dtype)
    keys, values, outs, inp = [], [], [], features
    for s in range(1, depth + 1):
        if s > 1:
            inp = torch.cat([torch.zeros_like(outs[-1][:, :1]), outs[-1][:, :-1]], dim=1)  # o^{s-1}_{j-1}
        h = draft.fc(torch.cat([inp, embedded], dim=-1))  # [B, T, H]
        x = layer.input_layernorm(h)
        q, k, v = (proj(x).view(b, t, -1, attn.head_dim).transpose(1, 2)
                   for proj in (attn.q_proj, attn.k_proj, attn.v_proj))  # [B, heads, T, d]
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        keys.append(k), values.append(v)
        # key (m, i) is pair i as step m made it: step 1 (exact) up to j-s+1, step m at j-s+m
        step, col = torch.arange(1, s + 1, device=position.device).repeat_interleave(t), position.repeat(s)
        row = position[:, None]
        allowed = torch.where(step == 1, col <= row - s + 1, col == row - s + step)  # [T, s*T]
        a = F.scaled_dot_product_attention(q, torch.cat(keys, 2), torch.cat(values, 2), attn_mask=allowed,
                                           scale=attn.scaling, enable_gqa=True)
        h = h + attn.o_proj(a.transpose(1, 2).reshape(b, t, -1))
        h = h + layer.mlp(layer.post_attention_layernorm(h))
        outs.append(draft.model.norm(h))
    return outs


def is_feature_draft(path: pathlib.Path) -> bool:
    try:
        return bool(json.loads((path / "config.json").read_text()).get(MARKER))
    except (OSError, ValueError, AttributeError):
        return False


def load_feature_draft(path: pathlib.Path, target: torch.nn.Module, d2t: torch.Tensor) -> FeatureDraft:
    """The draft in `path` (config.json + model.safetensors), in the target's dtype and device."""
    config = LlamaConfig.from_pretrained(path)
    if config.hidden_size != target.config.get_text_config().hidden_size:
        raise ValueError(f"it reads features of width {config.hidden_size}, the target's are "
                         f"{target.config.get_text_config().hidden_size}")
    draft = FeatureDraft(config)
    draft.load_state_dict(load_file(path / "model.safetensors"), strict=True)
    draft = draft.to(device=target.device, dtype=target.dtype).eval().requires_grad_(False)
    return draft.attach(target, d2t)


def save_feature_draft(draft: FeatureDraft, d2t: torch.Tensor, out: pathlib.Path) -> None:
    """config.json, model.safetensors (bfloat16) and the draft vocabulary: what load_feature_draft reads."""
    out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.to(torch.bfloat16).contiguous() for k, v in draft.state_dict().items()}, out / "model.safetensors")
    draft.config.dtype = "bfloat16"
    draft.config.save_pretrained(out)
    save_file({"d2t": d2t.to(torch.int32).contiguous()}, out / VOCAB_MAP_FILE)


def draft_config(target_config, intermediate_size: int) -> LlamaConfig:
    """A one-layer decoder as wide as the target, with the target's rotary settings."""
    t = target_config.get_text_config()
    return LlamaConfig(vocab_size=1, hidden_size=t.hidden_size, intermediate_size=intermediate_size,
                       num_hidden_layers=1, num_attention_heads=t.num_attention_heads,
                       num_key_value_heads=t.num_key_value_heads, head_dim=getattr(t, "head_dim", None),
                       max_position_embeddings=t.max_position_embeddings, rms_norm_eps=t.rms_norm_eps,
                       rope_parameters=dict(t.rope_parameters), pad_token_id=None, bos_token_id=None, eos_token_id=None,
                       tie_word_embeddings=False, **{MARKER: True})
