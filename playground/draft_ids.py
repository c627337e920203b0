"""A draft's name, read in one place. "ngram" is prompt lookup (no draft model); "ngram+<model>" a
cascade: prompt lookup drafts for <model>, which drafts for the target; any other name is a model (or a
feature draft) that drafts for the target itself."""

NGRAM = "ngram"
LOOKUP_NGRAM = 3  # prompt lookup matches the last 3 tokens, else 2, else 1 (the engine's and the export's)
CASCADE = NGRAM + "+"


def cascade(model_id: str) -> str:
    """The cascade of prompt lookup before this draft model."""
    return CASCADE + model_id


def is_cascade(draft_id: str) -> bool:
    return draft_id.startswith(CASCADE)


def uses_lookup(draft_id: str) -> bool:
    """Prompt lookup, alone or before a draft model (neither drafts a token tree)."""
    return draft_id == NGRAM or is_cascade(draft_id)


def draft_model(draft_id: str) -> str | None:
    """The model this draft loads: none for prompt lookup, the one after 'ngram+' for a cascade."""
    return None if draft_id == NGRAM else draft_id.removeprefix(CASCADE)


NO_PROBABILITIES = "prompt lookup's guesses have no probabilities to be unsure of"


def confidence_unused(policy: str, draft_id: str) -> bool:
    """The confidence stop under prompt lookup: nothing to stop on, the round drafts as under fixed."""
    return policy == "confidence" and draft_id == NGRAM
