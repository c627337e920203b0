"""The page. Its layout and wiring (page), the callbacks of each tab (playground_tab,
experiments_tab) and the web API (api); the inputs and share links (inputs, share, experiment_link); one live run
streamed as snapshots (live, pacing); what is drawn (render, plots, race);
downloads and stop flags (files); ZeroGPU leases (gpu). app.py only launches `page.demo`."""
