"""The page. Its layout and wiring (page), the callbacks of each tab (playground_tab,
experiments_tab, export_tab) and the web API (api); the inputs and share links (inputs, share, experiment_link);
one live run streamed as snapshots (live, pacing); what is drawn (render, plots, race, tree_view, theme);
downloads and stop flags (files); ZeroGPU leases (gpu); how it is served, bounded per address
(serving, sessions, leftovers); the default pair loaded before it is (warm_up). app.py only launches
`page.demo`."""
