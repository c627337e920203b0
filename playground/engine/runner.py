"""One causal LM with its KV cache. `crop` is the only place a runner's cache is rolled back (the fused GPU round
sets its pointers inside its captured programs, engine/fused.py)."""
import contextlib
import threading

import torch
from playground.engine.cache import GrowingLayer, keep_slots, new_cache
from playground.models.batch_invariant import ATTENTION, PROMPT_PASS, ROW_INVARIANT, prompt_pass, tree_batches


DECODE_TOKENS = 32  # passes this short use the model's decode thread count; longer ones (prefill) all threads, but a
# batch-invariant model's after its first (forward)
UNREACHABLE = -1e4  # logit of the tokens a reduced-vocabulary draft cannot write: exp() underflows to 0,
                    # yet stays finite, so a constraint that allows only such tokens still leaves a distribution


class ModelRunner:
    """Feeds new tokens to a Hugging Face causal LM, keeping the KV cache between calls.

    `vocab` limits the logits to the range both models of a pair share (e.g. Qwen2.5-0.5B has
    151936 rows, 7B 152064; ids past the tokenizer are padding). `threads` (CPU only) is the
    intra-op thread count for short passes (models.decode_threads: one where a tiny model's small
    products were timed faster on one thread, whose team costs more to start than it saves).

    `vocab_map` (a draft with a reduced vocabulary, d2t [N]): output row i of the model is token
    d2t[i] of the pair; inputs are mapped back, every other token to the model's last row ('other').
    The logits come back full width with UNREACHABLE elsewhere, so the draft's distribution gives
    those tokens probability 0 and the acceptance rule stays exact.

    `keep_hidden` (the target of a feature draft): each pass also keeps the model's last hidden
    states, `hidden` [n, H] for positions hidden_start.., taken from its decoder as the model's own
    pass goes by (the logits are the model's: a head that scales or caps them, Cohere's or Gemma-2's, included)."""

    def __init__(self, model: torch.nn.Module, vocab: int, threads: int | None = None,
                 vocab_map: torch.Tensor | None = None, keep_hidden: bool = False):
        self.model = model
        self.keep_hidden = keep_hidden
        self.hidden, self.hidden_start = None, 0
        self.vocab = vocab
        self.device = model.device
        self.threads = threads if model.device.type == "cpu" else None
        self.exact_rows = getattr(model, "playground_batch_invariant", False)
        self.cache = new_cache(model.config)
        self.d2t = self.t2d = None
        if vocab_map is not None:
            self.d2t = vocab_map.to(self.device, torch.long)
            self.t2d = torch.full((vocab,), model.config.vocab_size - 1, dtype=torch.long, device=self.device)
            self.t2d[self.d2t] = torch.arange(len(self.d2t), device=self.device)

    @property
    def length(self) -> int:
        """Number of tokens whose keys and values are cached."""
        return self.cache.get_seq_length()

    def reset(self) -> None:
        self.cache.reset()

    def prefill(self, ids: torch.Tensor) -> torch.Tensor:
        """Start a run: forget the cache, then one pass over ids [n] (a prompt's tokens but the last)
        -> the last position's logits [1, vocab]. Every run of this model starts with this same pass,
        so a batch-invariant model may attend over it in one batch (batch_invariant.prompt_pass)."""
        self.reset()
        with prompt_pass():
            return self.forward(ids, keep=1)

    def forward(self, ids: torch.Tensor, keep: int = 0) -> torch.Tensor:
        """ids [n] (long, on the model's device) -> logits of the last `keep` positions [keep, vocab]
        (all n when keep is 0). A batch-invariant model's passes after its first all take its decode thread count,
        whatever their width: their rows must be one-token passes' (its linear products are checked on one thread and
        on all, each alone; nothing checks rows across thread counts)."""
        if len(ids) > DECODE_TOKENS and (PROMPT_PASS.get() or not self.exact_rows):
            return self._forward(ids, keep)
        with self.decode_threads():
            return self._forward(ids, keep)

    @contextlib.contextmanager
    def decode_threads(self):
        """Run short passes on the model's decode thread count (CPU; compiled graphs guard on it)."""
        if self.threads is None:
            yield
            return
        default = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            yield
        finally:
            torch.set_num_threads(default)

    def _forward(self, ids: torch.Tensor, keep: int, **tree) -> torch.Tensor:
        """tree: position_ids, attention_mask and tree_runs of a token tree's pass (forward_tree)."""
        if self.t2d is not None:
            ids = self.t2d[ids]
        with self._hidden_kept() if self.keep_hidden else contextlib.nullcontext():
            out = self.model(input_ids=ids[None], past_key_values=self.cache, use_cache=True, logits_to_keep=keep, **tree)
        return self._full_width(out.logits[0])

    @contextlib.contextmanager
    def _hidden_kept(self):
        """`hidden` [n, H]: the decoder's last hidden states, kept as the pass goes by (a forward hook).
        The hook is on the model, which runs beside each other share: it keeps its own thread's pass only
        (another visitor's pass took its place: acceptance 0.31 against 0.32 alone, a Space review)."""
        self.hidden_start = self.length
        own = threading.get_ident()

        def keep(module, args, output):
            if threading.get_ident() == own:
                self.hidden = output[0][0]
        hook = self.model.get_decoder().register_forward_hook(keep)
        try:
            yield
        finally:
            hook.remove()

    @property
    def takes_trees(self) -> bool:
        """Whether this model's cache can be compacted after a token-tree pass (full attention only)."""
        return all(isinstance(layer, GrowingLayer) for layer in self.cache.layers)

    def forward_tree(self, ids: torch.Tensor, positions: torch.Tensor, visible: torch.Tensor, **nodes) -> torch.Tensor:
        """One pass over rows that are not one causal run (a token tree's): ids [m], positions [m]
        (each row's place in its own branch), visible [m, length + m] bool (the cached positions and
        rows of this pass each row attends to). -> logits [m, V]. The rows are cached in the pass's
        order; keep() then compacts the cache to the branch that was accepted. `nodes` (the rows'
        tree nodes and their parents) is for runners whose model reads more than tokens (FeatureRunner)."""
        mask, runs = tree_mask(visible, self.model)
        with self.decode_threads():
            return self._forward(ids, 0, position_ids=positions[None], attention_mask=mask, tree_runs=runs)

    def keep(self, start: int, slots: list[int]) -> None:
        """Keep cached positions [0, start) and `slots` after them (a tree's accepted path); see cache.keep_slots."""
        index = torch.tensor(slots, dtype=torch.long, device=self.device)
        keep_slots(self.cache, start, index)
        if self.hidden is not None and self.hidden_start <= start:  # the features a feature draft reads
            head = self.hidden[: start - self.hidden_start]
            self.hidden = torch.cat([head, self.hidden.index_select(0, index - self.hidden_start)])

    def _full_width(self, logits: torch.Tensor) -> torch.Tensor:
        return full_width(logits, self.vocab, self.d2t)

    def follow_target(self) -> None:
        """Read what the target's last pass left for this runner: nothing (a feature draft reads its
        hidden states, even in a round it did not draft)."""

    def crop(self, length: int) -> None:
        """Forget cached positions from `length` on (transformers 5: crop(-m) drops the last m)."""
        extra = self.length - length
        if extra > 0:
            self.cache.crop(-extra)


def tree_mask(visible: torch.Tensor, model) -> tuple[torch.Tensor, list | None]:
    """visible [m, kv] bool -> (the additive mask [1, 1, m, kv]: 0 seen, a very negative number not;
    the rows' runs for the batch-invariant attentions: tree_runs for the row-invariant one, laid out
    as batch_invariant.tree_batches for the bfloat16 eager one; None for attentions that read the mask)."""
    mask = torch.zeros(visible.shape, dtype=model.dtype, device=visible.device)
    mask.masked_fill_(~visible, torch.finfo(model.dtype).min)
    runs = None
    attention = getattr(model.config, "_attn_implementation", None)
    if attention == ROW_INVARIANT:
        runs = tree_runs(visible)
    elif attention == ATTENTION:  # the first run, then batches of chains, built once for every layer
        runs = tree_batches(tree_runs(visible), model.dtype, visible.device)
    return mask[None, None], runs


def tree_runs(visible: torch.Tensor) -> list[tuple[int, int, torch.Tensor | int]]:
    """Split a pass's rows (visible [m, kv]) into runs that attend as a chain does: each row of a
    run sees what the row before it sees, and itself (the pass's rows are cached in order, row r at
    key kv - m + r). -> [(first row, end row, the run's last row's keys)]: an int n for the first n
    keys (no copy), else their indices. A tree in depth-first order is one run per branch."""
    m, kv = visible.shape
    runs: list[list] = []
    for r, row in enumerate(visible.cpu()):
        keys = row.nonzero().flatten()
        prev = runs[-1][2] if runs else None
        if prev is not None and len(keys) == len(prev) + 1 and keys[-1] == kv - m + r and torch.equal(keys[:-1], prev):
            runs[-1][1:] = [r + 1, keys]
        else:
            runs.append([r, r + 1, keys])
    return [(start, end, len(keys) if torch.equal(keys, torch.arange(len(keys))) else keys.to(visible.device))
            for start, end, keys in runs]


def full_width(logits: torch.Tensor, vocab: int, d2t: torch.Tensor | None) -> torch.Tensor:
    """A model's logits [n, model vocab] -> the pair's [n, V] (a reduced vocabulary scattered back)."""
    if d2t is None:
        return logits[:, :vocab]
    rows = logits[:, : len(d2t)]  # [n, N]
    return rows.new_full((rows.shape[0], vocab), UNREACHABLE).index_copy_(1, d2t, rows)  # [n, V]
