"""No key twice in one JSON object, while writing. A schema's grammar (llguidance's or xgrammar's)
lets an object whose names are free (additionalProperties, patternProperties, propertyNames) repeat
one: `{"tags": {...}, "tags": {...}}`, which the check after the run refuses (what a repeated key
means is up to each reader). SmolLM2 wrote one over a real schema (JSONSchemaBench's Github_easy
o82294): asked for an instance, it echoed the schema and wrote "description" twice.

UniqueKeys wraps the grammar's matcher and follows the output byte by byte (objects, arrays,
strings; the grammar keeps it JSON). A token that closes a name its object already holds is masked
(` "a"` whole, `":` after `"a`, or `1, "a"` from a value). So is one that leads only to such names:
where the names are few (`"propertyNames": {"enum": ["red", "green", "blue"]}`), a comma after
`{"red": 1, "green": 2, "blue": 3` leads only to a repeat, and `r` after `{"red": 1, "` only to "red". Such a token (a comma, a quote or space where a name starts, a piece of a held name) is
looked ahead from: the matcher is forked and fed it, and the tokens its grammar allows then are
followed until one leads to a name the object does not hold (at most LOOKS forks a mask; past them
the token is let through). Where masking would leave no token at all, the grammar's mask stands:
never a dead end; such a repeat is left to the check after the run.

Only a schema some of whose objects have free names is wrapped (names_can_repeat: both grammars
write the names of `properties` in order, each once), and the look-ahead is only for one whose
free names can run out (names_can_run_out): elsewhere a name can always go on to a new one.

The mask depends on the output alone (not on what was looked at before), so speculation and the
target alone mask alike."""
import json
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import torch

from playground.constraints.guide import _bit
from playground.constraints.matcher import Wrapper, drop_last
from playground.constraints.safety import reachable
from playground.constraints.schema_keywords import children

QUOTE, BACKSLASH, COMMA = ord('"'), ord("\\"), ord(",")
OPENS, CLOSES = {ord("{"): True, ord("["): False}, {ord("}"), ord("]")}
LOOKS = 32  # matcher forks one mask may spend looking ahead; past them a token is let through
AFTERS_KEPT = 20_000  # tokens' lexed states kept per run (a few MB at most)


class Lexed(NamedTuple):
    """Where the output stands, after a token (kept per token: a rollback pops them; a tuple: made
    for each token a mask looks at)."""
    frames: tuple = ()  # one per open container: a frozenset of the names written (object) or None (array)
    wants_key: bool = False  # the innermost object's next string is a name (after { or ,)
    in_string: bool = False
    key: bytes | None = None  # the name being written, as written (inside a name only)
    escaped: bool = False  # the last byte in a string began an escape
    repeated: bool = False  # the bytes that led here closed a name its object already held


def lexed(state: Lexed, data: bytes) -> Lexed:
    """The state after the bytes `data` (a valid JSON continuation: the grammar allowed it)."""
    frames, wants_key, in_string, key, escaped = list(state.frames), state.wants_key, state.in_string, state.key, state.escaped
    start, repeated = 0, False  # where the name being written starts in `data`
    for i, byte in enumerate(data):
        if in_string:
            if escaped:
                escaped = False
            elif byte == BACKSLASH:
                escaped = True
            elif byte == QUOTE:
                if key is not None:
                    written = name(key + data[start:i])
                    repeated = repeated or written in frames[-1]
                    frames[-1] = frames[-1] | {written}
                    key, wants_key = None, False
                in_string = False
        elif byte == QUOTE:
            in_string, start = True, i + 1
            key = b"" if wants_key and frames and frames[-1] is not None else None
        elif byte in OPENS:
            frames.append(frozenset() if OPENS[byte] else None)
            wants_key = OPENS[byte]
        elif byte in CLOSES:
            if frames:
                frames.pop()
            wants_key = False
        elif byte == ord(","):
            wants_key = bool(frames) and frames[-1] is not None
    if key is not None:
        key += data[start:]
    return Lexed(tuple(frames), wants_key, in_string, key, escaped, repeated)


def name(raw: bytes) -> str:
    """A name as written (escapes and all) -> the name a reader gets."""
    if BACKSLASH not in raw:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            pass
    try:
        return json.loads(b'"' + raw + b'"')
    except ValueError:
        return raw.decode("utf-8", "replace")


def naming(state: Lexed) -> bool:
    """Inside a name, or where one starts (after { or , in an object)."""
    return state.key is not None or (state.wants_key and not state.in_string)


def could_repeat(state: Lexed) -> bool:
    """The name being written (or about to be) could still end as one its object holds: none is
    started yet, or what is written of it starts a held one. A name written with an escape is
    not followed here (only its closing is checked)."""
    if not naming(state) or not state.frames[-1]:
        return False
    return state.key is None or (BACKSLASH not in state.key and any(
        held.startswith(state.key) for held in map(_utf8, state.frames[-1])))


def _utf8(name: str) -> bytes:
    return name.encode("utf-8", "surrogatepass")


@dataclass(frozen=True, slots=True, eq=False)
class NameTables:
    """A tokenizer's tokens as UniqueKeys reads them (name_tables, built once per tokenizer)."""
    token_bytes: tuple[bytes, ...]  # each id's bytes
    quoted: np.ndarray  # [Q] int64: the ids holding a quote (only they open or close a name)
    commas: np.ndarray  # the ids holding a comma (only they lead from a value to the next name)
    quoted_commas: np.ndarray  # those holding both (from inside a string value to the next name)
    quoted_or_spaces: np.ndarray  # and those, or JSON whitespace alone (where a name starts)
    by_bytes: dict  # bytes -> the ids with those bytes

    def continuing(self, key: bytes, held: frozenset) -> np.ndarray:
        """The ids that write more of a name begun as `key` and keep it the start of a held name."""
        found = set()
        for name in map(_utf8, held):
            rest = name[len(key):] if name.startswith(key) else b""
            for end in range(1, len(rest) + 1):
                found.update(self.by_bytes.get(rest[:end], ()))
        return np.array(sorted(found), dtype=np.int64)


@dataclass(slots=True)
class Looks:
    """One mask's look-ahead: its forks left, and what was found from each state reached."""
    words: int  # a mask row's int32 words
    left: int = LOOKS
    seen: dict = field(default_factory=dict)  # Lexed -> whether a new name is reachable from there


def allowed_ids(words: np.ndarray, n: int):
    """The ids below n a mask row ([W] int32) allows, ascending, read a few words at a time (a
    look-ahead mostly stops at one of the first)."""
    found = np.flatnonzero(words)  # [N] the words allowing any id
    for start in range(0, len(found), 8):
        for word in found[start:start + 8].tolist():
            bits = int(words[word]) & 0xFFFFFFFF
            while bits:
                low = bits & -bits  # the lowest id left in this word
                token = 32 * word + low.bit_length() - 1
                if token >= n:
                    return
                yield token
                bits ^= low


class UniqueKeys(Wrapper):
    """A matcher (llguidance's or xgrammar's) with the same methods, masking repeated names."""

    def __init__(self, inner, tables: NameTables, look_ahead: bool = True):
        super().__init__(inner)  # it has fork(): a copy of its state to look ahead with
        self.tables = tables
        self.look_ahead = look_ahead  # names can run out (names_can_run_out): follow what could end as held ones
        self.states = [Lexed()]  # after each consumed token, the first before any
        self.afters: dict = {}  # (state, token) -> lexed(state, its bytes): a string's states repeat

    def fill_bitmask(self, row: torch.Tensor) -> None:
        self.inner.fill_bitmask(row)
        state = self.states[-1]
        words = row.numpy()  # [W] int32, the row itself
        ids = self._candidates(state)
        ids = ids[ids < 32 * len(words)]
        allowed = ids[(words[ids >> 5] >> (ids & 31)) & 1 == 1]  # [A] the candidates the grammar allows
        if not len(allowed):
            return
        looks = Looks(len(words))
        dead = [t for t in allowed.tolist() if not self._leads_to_a_new_name(self.inner, state, t, looks)]
        if not dead:
            return
        before = words.copy()
        for t in dead:
            words[t >> 5] &= ~np.int32(_bit(t & 31))
        if not words.any():  # nothing else is left: the grammar's mask stands (no dead end), the check says so
            words[:] = before

    def _candidates(self, state: Lexed) -> np.ndarray:
        """The ids that could lead, from here, to a repeat or to a name that can only end as one."""
        t = self.tables
        if naming(state) and state.frames[-1]:  # in a name, or where one starts, in an object holding some
            if not self.look_ahead:
                return t.quoted
            if state.key is None:
                return t.quoted_or_spaces
            return np.concatenate([t.quoted, t.continuing(state.key, state.frames[-1])])
        return t.quoted_commas if state.in_string else t.commas  # to the next name: a comma

    def _leads_to_a_new_name(self, matcher, state: Lexed, token: int, looks: "Looks") -> bool:
        """Can the output go on from `state` through `token` (allowed by `matcher`, standing at `state`)
        without writing a name its object holds? Looked ahead where the token leaves a name open
        that could still end as a held one."""
        after = self._after(state, token)
        if after.repeated:
            return False
        if not self.look_ahead or not could_repeat(after):
            return True
        if after not in looks.seen:
            looks.seen[after] = False  # a way back to a state being looked at (whitespace) leads nowhere new
            probe = matcher.fork()
            probe.consume(token)
            looks.seen[after] = self._new_name_reachable(probe, after, looks)
        return looks.seen[after]

    def _new_name_reachable(self, probe, state: Lexed, looks: "Looks") -> bool:
        """From `state` (the matcher `probe` standing there), some allowed token leads on to a name
        its object does not hold; yes where the look-ahead has spent its forks. Whitespace (the
        same state) is followed only where nothing else is allowed (llguidance's `, ` separator):
        it changes no name that can follow."""
        if looks.left <= 0:
            return True
        looks.left -= 1
        row = torch.empty(looks.words, dtype=torch.int32)
        probe.fill_bitmask(row)
        row = row.numpy()
        open_ones, spaces = [], []
        for token in allowed_ids(row, len(self.tables.token_bytes)):
            after = self._after(state, token)
            if after == state:
                spaces.append(token)
            elif not after.repeated and not could_repeat(after):
                return True  # a name no held one starts with, or past the name: a new name
            elif not after.repeated:
                open_ones.append(token)
        if any(self._leads_to_a_new_name(probe, state, token, looks) for token in open_ones):
            return True
        if open_ones or not spaces:
            return False
        probe.consume(spaces[0])  # only whitespace goes on from here
        return self._new_name_reachable(probe, state, looks)

    def _after(self, state: Lexed, token: int) -> Lexed:
        found = self.afters.get((state, token))
        if found is None:
            if len(self.afters) > AFTERS_KEPT:
                self.afters.clear()
            found = self.afters[state, token] = lexed(state, self.tables.token_bytes[token])
        return found

    def consume(self, token: int) -> bool:
        ok = self.inner.consume(token)
        if ok:
            data = self.tables.token_bytes[token] if token < len(self.tables.token_bytes) else b""
            self.states.append(lexed(self.states[-1], data))
        return ok

    def rollback(self, n: int) -> None:
        self.inner.rollback(n)
        drop_last(self.states, n)


OBJECT_WORDS = ("properties", "required", "minProperties", "maxProperties", "dependentRequired", "dependencies")
COMPOSED = ("$ref", "anyOf", "oneOf", "allOf")  # a node's value is its parts' (each walked on its own)


def names_can_repeat(schema) -> bool:
    """Could a grammar for this schema write a name twice in one object? Only where an object's
    names are free: both grammars write the names `properties` gives in order, each once
    (tests/test_unique_keys.py checks it). Free: patternProperties or propertyNames, or a node that
    may be an object without `additionalProperties: false` (`{}` and `true` among them; a node of
    $ref or anyOf alone is its parts'). Where no name can repeat, UniqueKeys is not needed."""
    if not isinstance(schema, dict):
        return schema is True
    for node in reachable(schema):
        if any(value is True for value in children(node)):
            return True
        if "patternProperties" in node or "propertyNames" in node:
            return True
        types = node.get("type", "object")
        may_be_object = "object" in (types if isinstance(types, list) else [types])
        literal = "enum" in node or "const" in node
        composed = any(key in node for key in COMPOSED) and not any(key in node for key in OBJECT_WORDS)
        if may_be_object and not literal and not (composed and "type" not in node) and \
                node.get("additionalProperties", True) is not False:
            return True
    return False


def names_can_run_out(schema) -> bool:
    """Could an object's free names all be written, so that a comma leads only to a repeat? Only
    where they are limited: propertyNames, or patternProperties where additionalProperties is false
    or absent (xgrammar's strict mode reads absent as false). Elsewhere free names go on without end
    and UniqueKeys need not look ahead."""
    return any("propertyNames" in node or ("patternProperties" in node and node.get("additionalProperties", False) is False)
               for node in (reachable(schema) if isinstance(schema, dict) else ()))


def name_tables(token_bytes: tuple[bytes, ...]) -> NameTables:
    """UniqueKeys' reading of a tokenizer, from each id's bytes (0.1 s at SmolLM2's 49k)."""
    def ids(test) -> np.ndarray:
        return np.array([i for i, data in enumerate(token_bytes) if test(data)], dtype=np.int64)
    by_bytes: dict[bytes, list[int]] = {}
    for i, data in enumerate(token_bytes):
        by_bytes.setdefault(data, []).append(i)
    space = lambda d: d and not d.strip(b" \t\n\r")  # noqa: E731
    return NameTables(token_bytes, ids(lambda d: QUOTE in d), ids(lambda d: COMMA in d),
                      ids(lambda d: QUOTE in d and COMMA in d), ids(lambda d: QUOTE in d or space(d)),
                      {data: tuple(found) for data, found in by_bytes.items()})
