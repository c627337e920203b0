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
import json
import pathlib

import torch
from safetensors.torch import load_file, save_file
from transformers import LlamaConfig, LlamaModel

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

    @property
    def device(self) -> torch.device:
        return self.fc.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.fc.weight.dtype

    def attach(self, target: torch.nn.Module, d2t: torch.Tensor) -> "FeatureDraft":
        """Use the target's input embedding and the rows d2t of its output head."""
        head = target.get_output_embeddings().weight.detach()
        self.__dict__["target_embedding"] = target.get_input_embeddings()
        self.head = head[d2t.to(head.device)].to(self.dtype).clone()
        return self

    def step(self, ids: torch.Tensor, features: torch.Tensor, cache, keep: int = 0):
        """ids [n] tokens x_i.., features [n, H] f_{i-1}.. -> (predicted features [n, H], logits of
        the last `keep` positions over the draft vocabulary [keep, N - 1]; all n when keep is 0)."""
        embedded = self.target_embedding(ids).to(self.dtype)  # [n, H]
        h = self.fc(torch.cat([features.to(self.dtype), embedded], dim=-1))[None]  # [1, n, H]
        out = self.model(inputs_embeds=h, past_key_values=cache, use_cache=True).last_hidden_state[0]
        return out, self.logits(out[-keep:] if keep else out)

    def logits(self, features: torch.Tensor) -> torch.Tensor:
        return features @ self.head.T  # [n, N - 1]


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
    draft = draft.to(device=target.device, dtype=target.dtype).eval()
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
