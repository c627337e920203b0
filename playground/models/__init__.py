"""Model loading: pairs of target and draft (loading), where their files are (locate), models shipped
inside PyPI packages (packaged), the memory and disk they need and the pairs kept (room), the device,
dtype they get (placement) and their decode threads (decode_threads), CPU products and attention that keep a pass's rows exact
(packed_linear, batch_invariant), projections fused into fewer products (fused_projections), the
EAGLE-style feature draft, and the weights that ship here."""
