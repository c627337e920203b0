"""Speculative decoding and structured output playground.

Public API (two names): `load_pair` gives a ready target/draft pair, `generate` streams one run.
"""
from playground.session import generate, load_pair

__all__ = ["generate", "load_pair"]
