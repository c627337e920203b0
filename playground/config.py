"""Frozen settings of one run; each validates itself so bad input fails before any model work."""
from dataclasses import dataclass, field

from playground.errors import PlaygroundError
from playground.limits import MAX_NEW_TOKENS

MAX_K = 16  # the page's slider, the CLI and the API alike
MIN_TEMPERATURE, MAX_TEMPERATURE = 0.01, 100.0  # outside, logits / T overflows or flattens to noise
MAX_SEED = 2**63 - 1  # torch generators take 64-bit signed seeds
POLICIES = ("fixed", "schedule", "confidence")  # see playground.engine.schedule


@dataclass(frozen=True, slots=True)
class SamplingParams:
    temperature: float = 0.0  # 0 means greedy
    top_p: float = 1.0
    top_k: int = 0  # 0 means no top-k cut

    def __post_init__(self):
        if self.temperature != 0 and not MIN_TEMPERATURE <= self.temperature <= MAX_TEMPERATURE:
            raise PlaygroundError(f"temperature must be 0 (greedy) or between {MIN_TEMPERATURE} and "
                                  f"{MAX_TEMPERATURE:g}, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise PlaygroundError(f"top-p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise PlaygroundError(f"top-k must be >= 0, got {self.top_k}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


@dataclass(frozen=True, slots=True)
class SpecConfig:
    k: int = 4
    max_new_tokens: int = 128
    seed: int = 0
    sampling: SamplingParams = field(default_factory=SamplingParams)
    policy: str = "fixed"  # draft length: fixed k, the +2/-1 schedule, or stop when the draft is unsure
    confidence: float = 0.5  # the "confidence" policy stops drafting below this top probability
    compile: bool = False  # static KV caches and compiled draft / verify passes (playground.engine.static)

    def __post_init__(self):
        if not 1 <= self.k <= MAX_K:
            raise PlaygroundError(f"k must be between 1 and {MAX_K}, got {self.k}")
        if not 1 <= self.max_new_tokens <= MAX_NEW_TOKENS:
            raise PlaygroundError(f"max new tokens must be between 1 and {MAX_NEW_TOKENS} on this host, "
                                  f"got {self.max_new_tokens}")
        if not 0 <= self.seed <= MAX_SEED:
            raise PlaygroundError(f"seed must be between 0 and 2^63 - 1, got {self.seed}")
        if self.policy not in POLICIES:
            raise PlaygroundError(f"unknown draft policy '{self.policy}': use one of {', '.join(POLICIES)}")
        if not 0 < self.confidence < 1:
            raise PlaygroundError(f"confidence must be between 0 and 1, got {self.confidence}")
