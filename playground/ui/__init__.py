"""The page. Its layout and wiring (page, page_style: its CSS and small scripts), the callbacks of each
tab (playground_tab, experiments_tab with its calculator, export_tab) and the web API (api); the inputs
and share links (inputs, share, experiment_link); one live run streamed as snapshots (live, pacing,
stream_diff: Gradio's edits of a streamed value made right; turn: how long a job may hold the device);
what is drawn (render, plots, race, tree_view, json_view, theme); downloads and stop flags (files);
ZeroGPU leases (gpu); how it is served, bounded per address (serving, calls: what a call's body may
hold, addresses: who sent it, sessions, leftovers, gradio_patches: every change made to Gradio itself);
the default pair loaded before it is (warm_up). app.py checks the host's settings, warms up, and
launches `page.demo` with serving's options."""
