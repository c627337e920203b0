"""The page's side: one live run streamed as snapshots (live, pacing), what is drawn (render,
plots, race), share links (share) and the experiments tab (experiments). app.py wires them."""
