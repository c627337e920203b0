"""The page against the CLI on the same runs: the app started as a server (`python app.py`), driven
through gradio_client's /run (what the browser calls: every snapshot drawn and sent), and
`python -m playground generate --json`, alternating, on the same prompts and settings. Prints each
side's tokens/s in engine time (what the page's and the CLI's tokens/s cards say) and the page's
wall-clock tokens/s from submit to the last update, with medians and their ratio.

    python scripts/bench_page.py [--preset smollm2] [--repeats 3] [--max-new-tokens 128]
    python scripts/bench_page.py --speedups 10   # the preset as a newcomer runs it: "Compare" on, its
                                                 # own prompt; how many runs show a speedup, and which
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(__file__), "..")
sys.path.insert(0, ROOT)
from playground.presets import get_preset  # noqa: E402
from playground.presets import Settings  # noqa: E402

PROMPTS = ["Why is the sky blue? Answer in three sentences.", "How do plants make their food?",
           "Explain what a hash table is to a beginner."]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(preset: str):
    """-> (process, url) once the server answers."""
    port = free_port()
    env = dict(os.environ, GRADIO_SERVER_PORT=str(port), GRADIO_SERVER_NAME="127.0.0.1", PLAYGROUND_PRESET=preset,
               GRADIO_ANALYTICS_ENABLED="False", HF_HUB_OFFLINE="1")
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/"
    from gradio_client import Client
    for _ in range(240):
        try:
            return proc, Client(url, verbose=False)
        except Exception:  # not up yet
            if proc.poll() is not None:
                raise SystemExit(f"the app exited: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.5)
    raise SystemExit("the app did not start in 2 minutes")


def page_speedups(client, preset, runs: int) -> None:
    """The preset's own prompt and settings with "Compare with the target alone" on, `runs` times."""
    told = []
    for i in range(runs):
        settings = Settings.from_preset(preset)
        settings.compare = True
        m = page_run(client, settings)["report"]["speedup_measure"]
        told.append(m["speedup"] is not None)
        shown = (f"{m['speedup']:.2f}x ({m['low']:.2f}-{m['high']:.2f}), {m['blocks']} measurement(s)" if told[-1]
                 else f"cannot tell: {m['reason']}")
        print(f"run {i + 1}: {shown}", flush=True)
    print(f"\n{preset.name}: {sum(told)} of {runs} runs showed a speedup")


def page_run(client, settings: Settings) -> dict:
    from playground.ui.inputs import inputs_from_settings  # the order of the page's inputs
    from playground.ui.playground_tab import RUN_SLOTS  # ... and of its outputs
    started = time.perf_counter()
    job = client.submit(*inputs_from_settings(settings), api_name="/run")
    outputs = None
    for outputs in job:
        pass
    wall = time.perf_counter() - started
    outputs = job.outputs()[-1] if outputs is None else outputs
    download = outputs[RUN_SLOTS.index("download")]  # the run's JSON file: its path, or an update of the download button holding it
    report = json.loads(open(download["value"] if isinstance(download, dict) else download).read())
    stats = report["stats"]
    return {"engine_tok_s": stats["tokens_per_s"], "wall_tok_s": stats["generated_tokens"] / wall,
            "tokens": stats["generated_tokens"], "ids": report["token_ids"], "report": report}


def cli_run(preset: str, prompt: str, max_new_tokens: int) -> dict:
    cmd = [sys.executable, "-m", "playground", "generate", "--preset", preset, "--prompt", prompt,
           "--max-new-tokens", str(max_new_tokens), "--json"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    if done.returncode:
        raise SystemExit(f"the CLI failed: {done.stderr[-2000:]}")
    out = json.loads(done.stdout)
    return {"engine_tok_s": out["stats"]["tokens_per_s"], "tokens": out["stats"]["generated_tokens"],
            "ids": out["token_ids"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="smollm2")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--speedups", type=int, default=0, help="instead: this many runs with Compare on")
    args = parser.parse_args()
    preset = get_preset(args.preset)
    proc, client = start_app(args.preset)
    if args.speedups:
        try:
            page_speedups(client, preset, args.speedups)
        finally:
            proc.terminate()
        return
    page, cli = [], []
    try:
        for repeat in range(args.repeats):
            for i, prompt in enumerate(PROMPTS):
                settings = Settings.from_preset(preset)
                settings.prompt, settings.max_new_tokens, settings.compare = prompt, args.max_new_tokens, False
                sides = [lambda: page.append(page_run(client, settings)),
                         lambda: cli.append(cli_run(args.preset, prompt, args.max_new_tokens))]
                for side in sides if (repeat + i) % 2 == 0 else sides[::-1]:  # alternate which goes first
                    side()
                same = page[-1]["ids"] == cli[-1]["ids"]
                print(f"repeat {repeat + 1} prompt {i + 1}: page {page[-1]['engine_tok_s']:.1f} tok/s (wall "
                      f"{page[-1]['wall_tok_s']:.1f}), CLI {cli[-1]['engine_tok_s']:.1f} tok/s, same tokens: {same}",
                      flush=True)
    finally:
        proc.terminate()
    med = {name: statistics.median(r[key] for r in runs) for name, runs, key in
           (("page", page, "engine_tok_s"), ("page wall", page, "wall_tok_s"), ("cli", cli, "engine_tok_s"))}
    ratios = [p["engine_tok_s"] / c["engine_tok_s"] for p, c in zip(page, cli)]
    print(f"\n{args.preset}, {len(page)} runs each: page {med['page']:.1f} tok/s (wall-clock {med['page wall']:.1f}), "
          f"CLI {med['cli']:.1f} tok/s; page / CLI {statistics.median(ratios):.2f} "
          f"(per pair {min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
