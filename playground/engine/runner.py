"""One causal LM with its KV cache. `crop` is the only place in the engine where a cache is rolled back."""
import torch
from playground.engine.cache import new_cache


DECODE_TOKENS = 32  # passes this short use the model's decode thread count; longer ones (prefill) all threads


class ModelRunner:
    """Feeds new tokens to a Hugging Face causal LM, keeping the KV cache between calls.

    `vocab` limits the logits to the range both models of a pair share (e.g. Qwen2.5-0.5B has
    151936 rows, 7B 152064; ids past the tokenizer are padding). `threads` (CPU only) is the
    intra-op thread count for short passes: a tiny model decodes faster on one thread than on
    several, whose start-up costs more than its small matrix products."""

    def __init__(self, model: torch.nn.Module, vocab: int, threads: int | None = None):
        self.model = model
        self.vocab = vocab
        self.device = model.device
        self.threads = threads if model.device.type == "cpu" else None
        self.cache = new_cache(model.config)

    @property
    def length(self) -> int:
        """Number of tokens whose keys and values are cached."""
        return self.cache.get_seq_length()

    def reset(self) -> None:
        self.cache.reset()

    def forward(self, ids: torch.Tensor, keep: int = 0) -> torch.Tensor:
        """ids [n] (long, on the model's device) -> logits of the last `keep` positions [keep, vocab]
        (all n when keep is 0)."""
        if self.threads is None or len(ids) > DECODE_TOKENS:
            return self._forward(ids, keep)
        default = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            return self._forward(ids, keep)
        finally:
            torch.set_num_threads(default)

    def _forward(self, ids: torch.Tensor, keep: int) -> torch.Tensor:
        out = self.model(input_ids=ids[None], past_key_values=self.cache, use_cache=True, logits_to_keep=keep)
        return out.logits[0, :, : self.vocab]

    def crop(self, length: int) -> None:
        """Forget cached positions from `length` on (transformers 5: crop(-m) drops the last m)."""
        extra = self.length - length
        if extra > 0:
            self.cache.crop(-extra)
