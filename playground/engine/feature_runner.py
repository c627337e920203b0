"""The runner of a feature draft (playground.models.feature_draft): a ModelRunner whose model reads, with
each token x_i, a feature of position i-1: the target's last hidden state where the target has
computed it, else the draft's own prediction from its previous step.

Bookkeeping, in token positions (the draft consumes tokens like any draft; x_0 has no feature and
is consumed without a pass, so the cache holds the pair of token i at position i-1):
    features   the target's hidden states of positions 0..n_true-1, read from the target's runner
               after each of its passes (its committed positions: the target's cache length)
    exact      tokens consumed whose pairs read the target's features; `crop` never keeps more,
               so pairs made from the draft's own guesses are recomputed once the target's are known
The proposer (DraftModelProposer) is unchanged: it crops to what it keeps, and feeds what is missing."""
import torch

from playground.engine.runner import ModelRunner, tree_mask


class FeatureRunner(ModelRunner):
    def __init__(self, model, vocab: int, threads: int | None, vocab_map: torch.Tensor, target: ModelRunner):
        super().__init__(model, vocab, threads, vocab_map)
        if not target.keep_hidden:
            raise ValueError("a feature draft needs a target runner made with keep_hidden=True")
        self.target = target
        self.features = torch.empty(256, model.config.hidden_size, dtype=model.dtype, device=self.device)
        self.n_true = self.offset = self.exact = 0
        self.guess, self.guess_at = None, -1  # the draft's last predicted feature [H] and its position
        self.tree_hidden = {}  # a token tree's node -> the feature its pair predicted (this round)

    @property
    def length(self) -> int:
        return self.cache.get_seq_length() + self.offset

    def reset(self) -> None:
        self._forget_pairs()
        self.n_true = 0

    def _forget_pairs(self) -> None:
        super().reset()
        self.offset = self.exact = 0
        self.guess, self.guess_at = None, -1

    def crop(self, length: int) -> None:
        length = min(length, self.exact)
        if length == 0:
            return self._forget_pairs()
        super().crop(length)  # ModelRunner.crop compares with self.length, which counts x_0
        self.guess_at = -1

    def _forward(self, ids: torch.Tensor, keep: int) -> torch.Tensor:
        self._read_target_features()
        self.tree_hidden = {}
        start = self.length
        if start == 0:  # x_0: no feature before it, nothing to compute
            ids, start, self.offset, self.exact = ids[1:], 1, 1, 1
            if len(ids) == 0:  # nothing to draft from: a uniform guess (still exact, just unlikely)
                self.guess, self.guess_at = self._features_for(1, 1)[0][0], 0  # f_0 for a tree's next depth
                return self._full_width(torch.zeros(1, len(self.d2t), dtype=self.model.dtype, device=self.device))
        while True:  # tokens past the target's features go one pass each, each on the previous guess
            features, known = self._features_for(start, len(ids))  # [m, H]: f_{start-1}..
            m = len(features)
            last = m == len(ids)
            hidden, logits = self.model.step(ids[:m], features, self.cache, keep if last else 1)
            if self.exact == start:
                self.exact += known
            self.guess, self.guess_at = hidden[-1], start + m - 1
            if last:
                return self._full_width(logits)
            ids, start = ids[m:], start + m

    def forward_tree(self, ids: torch.Tensor, positions: torch.Tensor, visible: torch.Tensor,
                     nodes=(), parents=()) -> torch.Tensor:
        """One depth of a token tree (playground.engine.tree): each node's pair reads the feature its
        parent's pair predicted (the root's: the last guess). Such pairs are never exact, so crop
        forgets them once the round is judged. positions and visible count tokens, as the proposer
        does; the cache holds pairs, one fewer (x_0 has none)."""
        features = torch.stack([self.guess if p < 0 else self.tree_hidden[p] for p in parents])  # [m, H]
        mask, _ = tree_mask(visible[:, self.offset:], self.model)
        with self.decode_threads():
            hidden, logits = self.model.step(ids, features, self.cache, 0, position_ids=(positions - self.offset)[None],
                                             attention_mask=mask)
        self.tree_hidden.update(zip(nodes, hidden))
        return self._full_width(logits)

    def keep(self, start: int, slots: list[int]) -> None:
        """Nothing to keep: the tree's pairs read guessed features; crop drops them (see above)."""

    def _features_for(self, start: int, n: int) -> tuple[torch.Tensor, int]:
        """-> (the features of the next m <= n tokens, f_{start-1}..; how many are the target's).
        The target's while it has them; else one token on the draft's last guess (zeros where there
        is none, as before the target's first pass: a poor guess, still exact)."""
        known = max(0, min(n, self.n_true - (start - 1)))
        if known:
            return self.features[start - 1:start - 1 + known], known
        if self.guess_at == start - 1:
            return self.guess[None], 0
        return self.features.new_zeros(1, self.features.shape[1]), 0

    def follow_target(self) -> None:
        """Every round, drafted or not (the schedule pauses): the target's next pass overwrites its
        hidden states."""
        self._read_target_features()

    def _read_target_features(self) -> None:
        """Append the target's hidden states of positions it has committed since the last read."""
        t = self.target
        if t.hidden is None or t.length <= self.n_true:
            return
        lo, hi = self.n_true - t.hidden_start, t.length - t.hidden_start
        if lo < 0 or hi > len(t.hidden):
            raise RuntimeError("feature draft: the target's features skipped positions")
        if t.length > len(self.features):
            grown = self.features.new_empty(max(t.length, 2 * len(self.features)), self.features.shape[1])
            grown[: self.n_true] = self.features[: self.n_true]
            self.features = grown
        self.features[self.n_true:t.length] = t.hidden[lo:hi].to(self.features.dtype)
        self.n_true = t.length
