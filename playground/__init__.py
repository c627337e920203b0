"""Speculative decoding and structured output playground.

Public API: `load_pair` gives a ready target/draft pair, `generate` streams one run's events (from
prompt ids and a SpecConfig); playground.session has the rest a caller needs (`spec_config`,
`encode_prompt`, `run`), as the README's example uses them.
"""
import os

__all__ = ["generate", "load_pair"]

# OpenMP's threads (GNU libgomp's, torch's on Linux) spin 300 times, not 300,000, waiting for work before they
# sleep: on 2 cores, beside one busy process (a browser drawing the stream), SmolLM2's target alone ran 2.7-9.7
# tokens/s spinning against 21-22 (2-core Xeon, torch 2.13), idle 30 against 31. Read as torch loads: set before
# it, unless the user set it (an application importing torch first keeps libgomp's own).
os.environ.setdefault("GOMP_SPINCOUNT", "300")


def __getattr__(name: str):
    """Lazy, so that `playground.models.packaged` or `playground.limits` load without the engine and its
    constraint backends (the draft-training script runs where those are not installed)."""
    if name in __all__:
        from playground import session
        return getattr(session, name)
    raise AttributeError(f"module 'playground' has no attribute {name!r}")


def __dir__() -> list[str]:  # (the lazy names above were missing from dir() and so from completion; a review)
    return sorted(set(globals()) | set(__all__))
