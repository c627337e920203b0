"""One causal LM with its KV cache. `crop` is the only place in the engine where a cache is rolled back."""
import torch
from transformers import DynamicCache


class ModelRunner:
    """Feeds new tokens to a Hugging Face causal LM, keeping the KV cache between calls.

    `vocab` limits the logits to the range both models of a pair share (e.g. Qwen2.5-0.5B has
    151936 rows, 7B 152064; ids past the tokenizer are padding)."""

    def __init__(self, model: torch.nn.Module, vocab: int):
        self.model = model
        self.vocab = vocab
        self.device = model.device
        self.cache = DynamicCache(config=model.config)

    @property
    def length(self) -> int:
        """Number of tokens whose keys and values are cached."""
        return self.cache.get_seq_length()

    def reset(self) -> None:
        self.cache = DynamicCache(config=self.model.config)

    def forward(self, ids: torch.Tensor, keep: int = 0) -> torch.Tensor:
        """ids [n] (long, on the model's device) -> logits of the last `keep` positions [keep, vocab]
        (all n when keep is 0)."""
        out = self.model(input_ids=ids[None], past_key_values=self.cache, use_cache=True, logits_to_keep=keep)
        return out.logits[0, :, : self.vocab]

    def crop(self, length: int) -> None:
        """Forget cached positions from `length` on (transformers 5: crop(-m) drops the last m)."""
        extra = self.length - length
        if extra > 0:
            self.cache.crop(-extra)
