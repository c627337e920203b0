"""Frozen settings of one run; each validates itself so bad input fails before any model work."""
from dataclasses import dataclass, field

from playground.errors import PlaygroundError

MAX_K = 32
POLICIES = ("fixed", "schedule", "confidence")  # see playground.engine.schedule


@dataclass(frozen=True, slots=True)
class SamplingParams:
    temperature: float = 0.0  # 0 means greedy
    top_p: float = 1.0
    top_k: int = 0  # 0 means no top-k cut

    def __post_init__(self):
        if not self.temperature >= 0:
            raise PlaygroundError(f"temperature must be >= 0, got {self.temperature}")
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

    def __post_init__(self):
        if not 1 <= self.k <= MAX_K:
            raise PlaygroundError(f"k must be between 1 and {MAX_K}, got {self.k}")
        if self.max_new_tokens < 1:
            raise PlaygroundError(f"max new tokens must be >= 1, got {self.max_new_tokens}")
        if self.policy not in POLICIES:
            raise PlaygroundError(f"unknown draft policy '{self.policy}': use one of {', '.join(POLICIES)}")
        if not 0 < self.confidence < 1:
            raise PlaygroundError(f"confidence must be between 0 and 1, got {self.confidence}")
