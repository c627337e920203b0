"""Structured output: JSON Schema, regex and grammar constraints (llguidance or xgrammar).

    spec = from_user(schema=..., regex=..., grammar=..., backend=...)   # checked user input
    read_constraint(spec)                                               # what compiling refuses, no tokenizer needed
    constraint = compile_constraint(spec, tokenizer, vocab, eos_ids)    # cached per tokenizer+text
    guide = constraint.guide(rows)                                      # per generation, to the engine
    constraint.validate(text, token_ids, complete)                      # after the run
"""
from playground.constraints.compile import Constraint, compile_constraint
from playground.constraints.reading import read_constraint
from playground.constraints.spec import ConstraintSpec, from_user

__all__ = ["Constraint", "ConstraintSpec", "compile_constraint", "from_user", "read_constraint"]
