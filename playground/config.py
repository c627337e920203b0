"""Frozen settings of one run (SamplingParams, SpecConfig); each validates itself so bad input fails before any
model work. Also the ranges and defaults they share with the page and the CLI, the token tree's text
('2,2/6+3'), the one constraint a run may carry, when a reasoning model may think, the default presets' names."""
import numbers
from dataclasses import dataclass, field

from playground.errors import PlaygroundError, shown
from playground.limits import MAX_NEW_TOKENS

# the default preset: with a GPU, on a CPU where SmolLM2 loads offline, else (playground.presets)
GPU_DEFAULT, CPU_DEFAULT, CPU_FALLBACK = "qwen2.5-7b", "smollm2", "demo"
MAX_K = 16  # the page's slider, the CLI and the API alike
DEFAULT_K, DEFAULT_MAX_NEW_TOKENS = 4, 128  # a run's, a preset's and the page's when not given (one place)
MIN_TEMPERATURE, MAX_TEMPERATURE = 0.01, 2.0  # below, logits / T overflows; above 2 an LLM's text is noise.
# One range for the page's slider, the API and the CLI (the CLI took up to 100 where the API stopped at 2)
MAX_SEED = 2**63 - 1  # torch generators take 64-bit signed seeds


def runnable_temperature(t: float) -> bool:
    """0 (greedy) or from MIN_TEMPERATURE to MAX_TEMPERATURE (the page's slider shows the values between
    0 and MIN_TEMPERATURE too: links, Share link and sweeps refuse them as a run does)."""
    return t == 0 or MIN_TEMPERATURE <= t <= MAX_TEMPERATURE
POLICIES = ("fixed", "schedule", "confidence")  # see playground.engine.schedule
BACKENDS = ("llguidance", "xgrammar")  # constraint backends, by name (playground.constraints.reading); the first the default
SCHEMA_HINT = "\n\nAnswer with JSON that matches this JSON Schema:\n"  # before the schema, where it goes in the prompt
MAX_TREE_NODES, MAX_TREE_BRANCHING, MAX_TREE_DEPTH = 64, 8, 8  # a token tree's verify pass stays this narrow
CONSTRAINT_FIELDS = {"schema": "json", "regex": "regex", "grammar": "grammar"}  # a setting's field: its kind


def one_constraint(schema: str = "", regex: str = "", grammar: str = "") -> tuple[str, str] | None:
    """(kind, text) of the constraint given, None when none is: a run takes one at most, so more is refused."""
    given = [(kind, text) for kind, text in zip(CONSTRAINT_FIELDS.values(), (schema, regex, grammar)) if text and text.strip()]
    if len(given) > 1:
        raise PlaygroundError("give one constraint only: a schema, a regex or a grammar")
    return given[0] if given else None


@dataclass(frozen=True, slots=True)
class SamplingParams:
    temperature: float = 0.0  # 0 means greedy
    top_p: float = 1.0
    top_k: int = 0  # 0 means no top-k cut

    def __post_init__(self):
        _check_kind(self, numbers.Real, "a number", "temperature", "top_p")
        _check_kind(self, numbers.Integral, "a whole number", "top_k")
        if not runnable_temperature(self.temperature):
            raise PlaygroundError(f"temperature must be 0 (greedy) or between {MIN_TEMPERATURE} and "
                                  f"{MAX_TEMPERATURE:g}, got {shown(self.temperature)}")
        if not 0 < self.top_p <= 1:
            raise PlaygroundError(f"top-p must be in (0, 1], got {shown(self.top_p)}")
        if self.top_k < 0:
            raise PlaygroundError(f"top-k must be >= 0, got {shown(self.top_k)}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


@dataclass(frozen=True, slots=True)
class SpecConfig:
    k: int = DEFAULT_K
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    seed: int = 0
    sampling: SamplingParams = field(default_factory=SamplingParams)
    policy: str = "fixed"  # draft length: fixed k, the +2/-1 schedule, or stop when the draft is unsure
    confidence: float = 0.5  # the "confidence" policy stops drafting below this top probability
    compile: bool = False  # static KV caches and compiled draft / verify passes (playground.engine.static)
    tree: tuple[int, ...] = ()  # a static token tree's children per node at each depth (playground.engine.tree); () a chain
    tree_budget: int = 0  # > 0: a dynamic tree (playground.engine.tree_dynamic) of at most this many nodes
    tree_lookup: int = 0  # > 0: up to this many prompt-lookup tokens grafted on each tree (playground.engine.tree_lookup)

    @property
    def depth(self) -> int:
        """The most drafts one round can keep: k for a chain, a token tree's deepest branch."""
        return longest_branch(self.tree, self.tree_lookup, self.k)

    def __post_init__(self):
        _check_kind(self, numbers.Integral, "a whole number", "k", "max_new_tokens", "seed", "tree_budget", "tree_lookup")
        _check_kind(self, numbers.Real, "a number", "confidence")
        if not isinstance(self.sampling, SamplingParams):
            raise PlaygroundError(f"sampling must be a SamplingParams, got {type(self.sampling).__name__}")
        if not isinstance(self.compile, bool):  # ('no' is true)
            raise PlaygroundError(f"compile must be True or False, got {shown(self.compile)}")
        if not isinstance(self.tree, tuple) or not all(_of_kind(b, numbers.Integral) for b in self.tree):
            raise PlaygroundError(f"a token tree is a tuple of whole numbers, children per depth, e.g. (3, 2, 1); got {shown(self.tree)}")
        if not 1 <= self.k <= MAX_K:
            raise PlaygroundError(f"k must be between 1 and {MAX_K}, got {shown(self.k)}")
        if not 1 <= self.max_new_tokens <= MAX_NEW_TOKENS:
            raise PlaygroundError(f"max new tokens must be between 1 and {MAX_NEW_TOKENS} on this host "
                                  f"(PLAYGROUND_MAX_NEW_TOKENS), got {shown(self.max_new_tokens)}")
        if not 0 <= self.seed <= MAX_SEED:
            raise PlaygroundError(f"seed must be between 0 and 2^63 - 1, got {shown(self.seed)}")
        if self.policy not in POLICIES:
            raise PlaygroundError(f"unknown draft policy '{self.policy}': use one of {', '.join(POLICIES)}")
        if not 0 < self.confidence < 1:
            raise PlaygroundError(f"confidence must be above 0 and below 1 (a probability the draft's likeliest "
                                  f"token must reach), got {shown(self.confidence)}")
        if self.tree:
            self._check_tree()
        elif self.tree_budget or self.tree_lookup:
            raise PlaygroundError("a dynamic tree's budget or a prompt-lookup branch needs a tree's children per depth, "
                                  "e.g. 4,4,4/12 or 1,1,1+3")

    def _check_tree(self) -> None:
        if not 1 <= len(self.tree) <= MAX_TREE_DEPTH or not all(1 <= b <= MAX_TREE_BRANCHING for b in self.tree):
            raise PlaygroundError(f"a token tree is 1 to {MAX_TREE_DEPTH} depths of 1 to {MAX_TREE_BRANCHING} "
                                  f"children per node, {MAX_TREE_NODES} nodes at most, e.g. 3,2,1; "
                                  f"got {','.join(map(str, self.tree))}")
        if self.tree_budget:
            self._check_dynamic()
        elif tree_nodes(self.tree) > MAX_TREE_NODES:
            raise PlaygroundError(f"the token tree {','.join(map(str, self.tree))} has {tree_nodes(self.tree)} nodes; "
                                  f"at most {MAX_TREE_NODES} are verified in one pass")
        if self.tree_lookup:
            self._check_lookup()
        if self.policy != "fixed":  # (compiled passes: a tree runs eager and says so, session.compile_fallback)
            raise PlaygroundError("a token tree runs with the fixed draft policy for now")

    def _check_lookup(self) -> None:
        nodes = self.tree_budget or tree_nodes(self.tree)
        if not 1 <= self.tree_lookup <= MAX_TREE_DEPTH or nodes + self.tree_lookup > MAX_TREE_NODES:
            raise PlaygroundError(f"a tree's prompt-lookup branch is 1 to {MAX_TREE_DEPTH} tokens, within "
                                  f"{MAX_TREE_NODES} nodes in all; got +{self.tree_lookup} on {nodes} nodes")
        if not self.sampling.greedy:
            raise PlaygroundError("a prompt-lookup branch is for greedy decoding (its tokens are not drawn from the "
                                  "draft, so sampling would not stay exact): set the temperature to 0")

    def _check_dynamic(self) -> None:
        if not 1 <= self.tree_budget <= MAX_TREE_NODES:
            raise PlaygroundError(f"a dynamic tree verifies 1 to {MAX_TREE_NODES} nodes, got {shown(self.tree_budget)}")
        if self.tree_budget > (most := dynamic_nodes(self.tree)):  # (2,2/64 ran, said as given, at 6 nodes a round)
            shape = ",".join(map(str, self.tree))
            raise PlaygroundError(f"the dynamic tree {shape} grows at most {most} nodes, so a budget of {self.tree_budget} "
                                  f"is more than it can verify: give {shape}/{most} or less, or more children per depth")
        if not self.sampling.greedy:
            raise PlaygroundError("a dynamic tree is for greedy decoding (pruning by the draft's probabilities would "
                                  "bias sampling): set the temperature to 0, or use a static tree")


_LABELS = {"top_k": "top-k", "top_p": "top-p"}  # as the range checks name them


def _of_kind(value, kind: type) -> bool:
    return isinstance(value, kind) and not isinstance(value, bool)  # (True is an int to Python)


def _check_kind(settings, kind: type, said: str, *names: str) -> None:
    """Each field of `kind` (k=2.5 ran until the engine's TypeError, a seed of 1.5 until manual_seed's,
    top_p='0.9' failed on '<=' between str and float); NaN and infinity are left to each range's check,
    whose message gives the range."""
    for name in names:
        if not _of_kind(value := getattr(settings, name), kind):
            raise PlaygroundError(f"{_LABELS.get(name, name.replace('_', ' '))} must be {said}, got {shown(value)}")


GREEDY = SamplingParams(temperature=0.0)  # greedy itself, not "the default" (which may one day sample)


def tree_shape(text: str) -> tuple[int, ...]:
    """'1,2,1,1' (children per node at each depth; '' for a chain) -> (1, 2, 1, 1), checked by
    SpecConfig when used; '4,4,4/12' (a dynamic tree, see tree_budget) -> (4, 4, 4); '4,4,4/12+3'
    (with a prompt-lookup branch, see tree_lookup) -> (4, 4, 4). Anything but small whole numbers,
    commas, one '/N' and one '+N' is a PlaygroundError."""
    shape, budget, lookup = _tree_parts(text)
    parts = [part.strip() for part in shape.split(",")] if shape.strip() else []
    numbers = parts + [n.strip() for n in (budget, lookup) if n is not None]
    shown = text if len(text) <= 40 else text[:40] + "…"
    if not all(part.isascii() and part.isdigit() for part in numbers):
        raise PlaygroundError(f"a token tree is children per depth, e.g. 1,2,1,1, or a dynamic tree with its node "
                              f"budget, e.g. 4,4,4,4/16, with up to N looked-up tokens: +N; got '{shown}'")
    if (budget is not None or lookup is not None) and not parts:
        raise PlaygroundError(f"a token tree needs its children per depth first, e.g. 4,4,4/12 or 1,1,1+3; got '{shown}'")
    if len(text) > 40 or any(int(n) > 9999 for n in numbers):  # (said as bad syntax: 99999,99999, or 21 ones;
        # smaller sizes past the bounds are SpecConfig's to say)
        raise PlaygroundError(f"a token tree is at most {MAX_TREE_DEPTH} deep, {MAX_TREE_BRANCHING} children a node, "
                              f"{MAX_TREE_NODES} nodes (a dynamic tree's budget too), a prompt-lookup branch at most "
                              f"{MAX_TREE_DEPTH} tokens; got '{shown}'")
    return tuple(int(part) for part in parts)


def tree_budget(text: str) -> int:
    """'4,4,4,4/16' -> 16: a dynamic tree of at most 16 nodes (0: a static tree or a chain)."""
    return _tree_count(text, 1, f"a dynamic tree verifies 1 to {MAX_TREE_NODES} nodes, got {{}}")


def tree_lookup(text: str) -> int:
    """'2,2,2/5+3' -> 3: up to 3 prompt-lookup tokens grafted onto each round's tree (0: none)."""
    return _tree_count(text, 2, f"a tree's prompt-lookup branch is 1 to {MAX_TREE_DEPTH} tokens, got +{{}}")


def _tree_count(text: str, part: int, refusal: str) -> int:
    """The number after '/' (part 1) or '+' (part 2) of a checked tree text; 0 when not written."""
    tree_shape(text)
    number = _tree_parts(text)[part]
    if number is not None and int(number) < 1:
        raise PlaygroundError(refusal.format(number))
    return int(number) if number is not None else 0


def tree_fields(text: str) -> dict:
    """The SpecConfig fields a tree's text sets: '2,2,2/5+3' -> tree, tree_budget and tree_lookup,
    their sizes checked (what they need of the other settings is SpecConfig's to check)."""
    fields = {"tree": tree_shape(text), "tree_budget": tree_budget(text), "tree_lookup": tree_lookup(text)}
    if fields["tree"]:
        SpecConfig(**fields, sampling=GREEDY, policy="fixed", compile=False)  # only the sizes can be refused
    return fields


def tree_text(cfg: SpecConfig) -> str:
    """The text that writes cfg's tree: tree_fields' inverse ('' for a chain)."""
    return (",".join(map(str, cfg.tree)) + (f"/{cfg.tree_budget}" if cfg.tree_budget else "")
            + (f"+{cfg.tree_lookup}" if cfg.tree_lookup else ""))


def _tree_parts(text: str) -> tuple[str, str | None, str | None]:
    """'4,4/12+3' -> ('4,4', '12', '3'); a part not written is None."""
    rest, plus, lookup = text.partition("+")
    shape, slash, budget = rest.partition("/")
    return shape, budget if slash else None, lookup if plus else None


def dynamic_nodes(branching: tuple[int, ...]) -> int:
    """Nodes a dynamic tree grows (engine/tree_dynamic: each depth grows its best `width` paths, not every
    node): (2, 2, 2) -> 2 + 2*2 + 2*2 = 10, where a static 2,2,2 has 14."""
    total, frontier = 0, 1
    for b in branching:
        total, frontier = total + frontier * b, b
    return total


def tree_nodes(branching: tuple[int, ...]) -> int:
    """Nodes of a static tree: (3, 2, 1) -> 3 + 3*2 + 3*2*1 = 15."""
    total, width = 0, 1
    for b in branching:
        width *= b
        total += width
    return total


THINK_START = "<think>"  # where it starts: in the output (Qwen3), or left open by the chat template (DeepSeek-R1)
THINK_END = "</think>"  # where a reasoning model's thinking ends (constraints.reasoning finds it in the tokens' bytes)
NO_THINK_END = (f"this model's tokenizer has no {THINK_END} token: thinking before the answer needs a reasoning model "
                "(Qwen3, DeepSeek-R1); set the thinking budget to 0")  # (Run's refusal, and the export's of a shipped model)
BUDGET_RAN_OUT = f"the thinking budget ran out: {THINK_END} forced"  # (RunResult.thinking_cut, said by the CLI and the page)


def thinks(constrained: bool, think_budget: int) -> bool:
    """Whether a reasoning model may think before it answers: always without a constraint; under one
    only with a thinking budget (the constraint starts after </think>). Otherwise its chat template is
    asked not to (enable_thinking=False: Qwen3 writes an empty think block and answers)."""
    return not constrained or think_budget > 0


def no_room_to_answer(think_budget: int, max_new_tokens: int) -> str:
    """Why a constrained reasoning run may end before its answer: a thinking budget and its </think>
    (a token at least) leaving no token of max new tokens (a model that thinks that long ends with its
    answer empty, and the run said so only then); '' when there is room."""
    if think_budget <= 0 or not 0 < max_new_tokens <= think_budget + 1:  # (no budget: nothing to say; max new
        return ""  # tokens 1 said it of every run)
    return (f"the thinking budget ({think_budget} tokens) and </think> leave no room for an answer within max new "
            f"tokens ({max_new_tokens}): a model that thinks that long ends before its answer (raise max new tokens "
            "or lower the budget)")


def depths(parents: list[int]) -> list[int]:
    """A token tree's node depths (1 for the root's children); parents come before their children."""
    out: list[int] = []
    for p in parents:
        out.append(1 if p < 0 else out[p] + 1)
    return out


def longest_branch(tree: tuple[int, ...], lookup: int, k: int) -> int:
    """The most drafts one round can keep: k for a chain, else a tree's depth or its lookup branch's length."""
    return max(len(tree), lookup) if tree else k
