"""Speculative decoding and structured output playground.

Public API: `load_pair` gives a ready target/draft pair, `generate` streams one run's events (from
prompt ids and a SpecConfig); playground.session has the rest a caller needs (`spec_config`,
`encode_prompt`, `run`), as the README's example uses them.
"""
__all__ = ["generate", "load_pair"]


def __getattr__(name: str):
    """Lazy, so that `playground.models.packaged` or `playground.limits` load without the engine and its
    constraint backends (the draft-training script runs where those are not installed)."""
    if name in __all__:
        from playground import session
        return getattr(session, name)
    raise AttributeError(f"module 'playground' has no attribute {name!r}")
