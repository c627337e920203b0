"""One generation's constraint state, with the bookkeeping speculation needs (the approach of vLLM
and SGLang): the draft proposes under the mask of the current state, each drafted token is consumed
tentatively so the next position's mask follows it, the target's k+1 verify rows are masked with
the states after the preceding drafts, and after the verdict the matcher is rolled back past the
rejected drafts and fed the target's own token.

EOS never reaches the matcher: the mask allows it only where the structure may end, and it ends the
generation, so it is kept as a marker here (llguidance does not record an EOS consumed in a
stopped state, which would make rollback counts drift)."""
import torch

from playground.errors import PlaygroundError

DEAD_END = "no token can continue the output"  # what a matcher's error() says when nothing may follow
NO_WAY_ON = ("no output can match this constraint from here: it allows no next token, and what is written "
             "does not complete it (a part of it can match nothing, such as an empty character class)")


class NoWayOn(PlaygroundError):
    """The constraint allows no next token where what is written does not complete it."""
    where = "constraint"

    def __init__(self, message: str = NO_WAY_ON):
        super().__init__(message)


class Guide:
    def __init__(self, matcher, vocab: int, eos_ids: frozenset[int], max_rows: int):
        self.matcher = matcher
        self.vocab = vocab
        self.eos_ids = eos_ids
        self.bitmask = torch.full((max_rows, (vocab + 31) // 32), -1, dtype=torch.int32)  # [rows, W]
        self.rows = 0  # mask rows filled this round (row i: the state before draft token i+1)
        self.drafted: list[int] = []  # draft tokens consumed tentatively this round
        self.ended = False  # an EOS was committed
        self.first_row_ready = False  # bitmask[0] already holds the current state's mask
        self.alone = [False] * max_rows  # row i's mask allowed one token: a draft there had no choice
        self.dead_paths: set[tuple[int, ...]] = set()  # a token tree's paths after which nothing is allowed
        self.paths_alone: list[bool] = []  # path_masks' rows that allowed one token alone

    # -- masks -------------------------------------------------------------------------------------
    # The effective mask of a state is the grammar's mask, narrowed to the backend's first jump-forward
    # token when there is one. It depends on the state alone, so where a round happens to start does
    # not change what is forced: target-only and speculative decoding see the same masks everywhere.

    def _fill(self, row: torch.Tensor) -> None:
        if self.ended or self.draft_stopped():
            row.fill_(-1)  # past an EOS nothing is used; allow all rather than nothing
            return
        jump = self.matcher.forced_tokens()
        if jump:
            row.zero_()
            row[jump[0] // 32] = _bit(jump[0] % 32)
        else:
            self.matcher.fill_bitmask(row)
        if self.matcher.error() == DEAD_END:
            row.zero_()  # nothing may follow: where the target writes next its caller says NoWayOn,
            return  # a draft's guess there is only refused (rollback clears the matcher's error)
        self._raise_if_stuck()

    def _raise_if_stuck(self) -> None:
        """A matcher that hit a limit (llguidance's parser limits, say) says so once; never let
        that look like an ordinary end of the output. llguidance's dead end is NoWayOn."""
        error = self.matcher.error()
        if error == DEAD_END:
            raise NoWayOn()
        if error:
            exc = PlaygroundError(f"the constraint engine gave up on this constraint: {error}{gave_up_why(error)}")
            exc.where = "constraint"
            raise exc

    def forced(self, budget: int) -> list[int]:
        """Commit and return the tokens the grammar forces from here (effective mask of one token:
        jump-forward text, or EOS once the structure is complete and nothing else may follow)."""
        out: list[int] = []
        while len(out) < budget and not self.ended:
            self._fill(self.bitmask[0])
            token = _single(self.bitmask[0])
            if token is None:
                if not self.bitmask[0].any() and not self.matcher.accepting():  # the committed state, where the
                    raise NoWayOn()  # target writes next (a draft's dead end is only refused, as any rejected guess)
                self.first_row_ready = True  # the first draft position reuses this mask
                break
            self._commit([token])
            out.append(token)
        return out

    def _commit(self, tokens: list[int]) -> bool:
        """Consume committed tokens, each drawn under its mask (True): a refusal is the matcher's limit,
        or a mask that was not the state's (an engine bug: raised, where False left the matcher a token
        behind the output, unseen)."""
        for token in tokens:
            if token in self.eos_ids:
                self.ended = True
            elif not self.matcher.consume(token):
                self._raise_if_stuck()
                raise RuntimeError(f"token {token} was not allowed by the mask it was drawn under")
        return True

    # -- one round ---------------------------------------------------------------------------------

    def next_mask(self) -> torch.Tensor:
        """Fill and return the mask for the next drafted position ([W] int32, CPU)."""
        row = self.bitmask[self.rows]
        if not (self.rows == 0 and self.first_row_ready):
            self._fill(row)
        self.alone[self.rows] = _single(row) is not None
        self.first_row_ready = False
        self.rows += 1
        return row

    def no_choice(self) -> list[bool]:
        """For each row handed out this round (drafts, then the target's row): whether its mask
        allowed one token alone (a jump-forward token, `</think>` past the thinking budget)."""
        return self.alone[:self.rows]

    def unuse_mask(self) -> None:
        """The last mask handed out was not drafted under: its row is refilled for the next one."""
        self.rows -= 1

    def consume_draft(self, token: int) -> None:
        if token not in self.eos_ids and not self.matcher.consume(token):
            self._raise_if_stuck()
            raise RuntimeError(f"draft token {token} was not allowed by the mask it was drawn under")
        self.drafted.append(token)

    def allowed_prefix(self, tokens: list[int]) -> list[int]:
        """Consume guessed tokens while the mask allows them, up to an allowed EOS (the rows after one
        allow anything, and nothing after it can be committed); the rest are dropped."""
        kept = []
        for token in tokens:
            row = self.next_mask()
            if token >= self.vocab or not (row[token // 32].item() >> (token % 32)) & 1:
                self.unuse_mask()  # that row will be refilled as the state after the kept tokens
                break
            self.consume_draft(token)
            kept.append(token)
            if self.draft_stopped():
                break
        return kept

    def draft_stopped(self) -> bool:
        """True once the draft has proposed an EOS: nothing after it can be committed."""
        return bool(self.drafted) and self.drafted[-1] in self.eos_ids

    def verify_masks(self) -> torch.Tensor:
        """[k+1, W]: the masks for the target's verify rows (fills the state after the last draft)."""
        self.next_mask()
        return self.bitmask[: self.rows]

    def settle(self, kept: int, target_token: int | None) -> None:
        """Keep `kept` drafts, roll the rest back, then commit the target's token (if one follows).
        A target's token drawn where the constraint allows nothing is NoWayOn, as in forced()."""
        self.matcher.rollback(sum(t not in self.eos_ids for t in self.drafted[kept:]))
        self.ended = self.ended or any(t in self.eos_ids for t in self.drafted[:kept])
        rows, self.drafted, self.rows, self.first_row_ready = self.rows, [], 0, False
        if target_token is None or self.ended:
            return
        if kept < rows and not self.bitmask[kept].any() and not self.matcher.accepting():
            raise NoWayOn()
        self._commit([target_token])

    # -- token trees -------------------------------------------------------------------------------

    def path_masks(self, paths: list[list[int]]) -> torch.Tensor:
        """[len(paths), W]: the mask after each path of tokens from the current state (a token tree's
        root and nodes, each through its ancestors); the state is left as it was. Past an EOS in a
        path nothing is used: everything is allowed there."""
        out, dead = torch.empty(len(paths), self.bitmask.shape[1], dtype=torch.int32), set()
        for row, path in zip(out, paths):
            body = path[:next((i for i, t in enumerate(path) if t in self.eos_ids), len(path))]
            for token in body:
                if not self.matcher.consume(token):
                    self._raise_if_stuck()
                    raise RuntimeError(f"tree token {token} was not allowed by the mask it was drawn under")
            self._fill(row) if len(body) == len(path) else row.fill_(-1)
            if not row.any() and not self.matcher.accepting():
                dead.add(tuple(path))
            self.matcher.rollback(len(body))
        self.first_row_ready, self.dead_paths = False, dead
        self.paths_alone = [_single(row) is not None for row in out]  # each path's mask allowed one token
        return out

    def allowed_path(self, tokens: list[int]) -> list[int]:
        """The longest prefix of `tokens` the constraint allows from the current state (a guess
        grafted onto a token tree; nothing after an EOS); the state is left as it was."""
        row, kept = torch.empty(self.bitmask.shape[1], dtype=torch.int32), []
        for token in tokens:
            self._fill(row)
            if token >= self.vocab or not (row[token // 32].item() >> (token % 32)) & 1:
                break
            if token not in self.eos_ids and not self.matcher.consume(token):
                break  # allowed by the mask, refused by the matcher: keep what it took
            kept.append(token)
            if token in self.eos_ids:
                break
        self.matcher.rollback(sum(t not in self.eos_ids for t in kept))
        return kept

    def commit_path(self, tokens: list[int], kept: int) -> None:
        """A token tree's verdict: commit the kept branch (`kept` nodes) and the target's token, which
        is NoWayOn where the branch left the constraint nothing to allow."""
        self.drafted, self.rows, self.first_row_ready = [], 0, False
        if len(tokens) > kept and tuple(tokens[:kept]) in self.dead_paths:
            raise NoWayOn()
        self._commit(tokens)

    def accepting(self) -> bool:
        return self.ended or self.matcher.accepting()

    def could_go_on(self) -> bool:
        """Whether the committed state allows a token besides an end: an output stopped there by
        its budget may be cut short (more digits of a number). Read on a row of its own: the
        guide's rows are left as they are."""
        if self.ended:
            return False
        row = torch.zeros_like(self.bitmask[0])
        try:
            self._fill(row)
        except PlaygroundError:  # (stuck, or the run's matcher time spent: the finished result is kept, not this flag)
            return False
        return allows_besides(row, self.eos_ids)


def gave_up_why(error: str) -> str:
    """What a matcher's limit most likely says of the constraint, where llguidance's own words do not ('' else):
    'Too many items (limit 50000; ff_tokens)' came of a grammar whose rule only repeats itself (a review)."""
    if "Too many items" in error and "ff_tokens" in error:
        return (" (following the tokens the constraint forces ran past the parser's limit: a rule that can only repeat "
                "itself, such as root ::= \"a\" root, forces text forever and no finite text satisfies it)")
    return ""


def allows_besides(mask: torch.Tensor, ids) -> bool:
    """Whether a packed mask ([W] int32) allows a token other than `ids` (ids past it: none to clear)."""
    rest = mask.clone()
    for i in ids:
        if 0 <= i < 32 * len(rest):
            rest[i // 32] &= ~_bit(i % 32)
    return bool(rest.any())


def _bit(j: int) -> int:
    """Bit j of an int32 word, as the signed value torch stores."""
    return (1 << j) - (1 << 32) if j == 31 else 1 << j


def _single(row: torch.Tensor) -> int | None:
    """The token a mask row allows, if it allows exactly one."""
    words = row.nonzero().flatten()
    if len(words) != 1:
        return None
    word = row[words[0]].item() & 0xFFFFFFFF
    return int(words[0]) * 32 + word.bit_length() - 1 if word & (word - 1) == 0 else None
