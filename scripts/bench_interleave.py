"""Does timing speculation and the target alone round by round, interleaved (what every speedup the
product shows does: playground/measure/speedup.py), move either side's speed? Against whole runs of
each side, alternated, on the same prompts in the same process.

    python scripts/bench_interleave.py [--preset smollm2] [--repeats 4] [--max-new-tokens 96]

A weight-bound model's passes could be slowed by the other model's weights evicting its own from the
caches between rounds, the target alone more than speculation (whose rounds switch models anyway);
the two ratios printed agree when they do not. Greedy, the preset's k, its chat setting, three prompts."""
import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from playground import session  # noqa: E402
from playground.measure.machine import machine, machine_line  # noqa: E402
from playground.measure.speedup import interleave, timed  # noqa: E402
from playground.presets import all_presets  # noqa: E402

PROMPTS = {"demo": ["def fib(n):\n", "import os\n\nclass Config:\n"],
           "smollm2": ["Give three tips for sleeping well.", "What is a prime number?"]}


def interleaved(pair, ids, cfg) -> tuple[tuple[float, int], tuple[float, int]]:
    """-> ((seconds, tokens) speculative, (seconds, tokens) alone), stepped round by round."""
    sides = {"spec": [], "base": []}
    for side, event in interleave(session.generate(pair, ids, cfg, True), session.generate(pair, ids, cfg, False)):
        sides[side].append(event)
    return tuple((t.seconds, t.tokens) for t in (timed(sides["spec"]), timed(sides["base"])))


def whole(pair, ids, cfg, speculative: bool) -> tuple[float, int]:
    t = timed(list(session.generate(pair, ids, cfg, speculative)))
    return t.seconds, t.tokens


def rate(runs: list[tuple[float, int]]) -> float:
    return sum(n for _, n in runs) / sum(s for s, _ in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="smollm2")
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=96)
    args = parser.parse_args()
    preset = all_presets()[args.preset]
    pair = session.load_pair(preset.target, preset.draft)
    cfg = session.spec_config(k=preset.k, max_new_tokens=args.max_new_tokens)
    texts = [preset.prompt, *PROMPTS.get(args.preset, [])]
    prompts = [session.encode_prompt(pair, text, chat=preset.chat) for text in texts]
    print(machine_line(machine(pair.device)))
    for ids in prompts:  # warm-up: one-time costs out of both ways
        interleaved(pair, ids, cfg), whole(pair, ids, cfg, True), whole(pair, ids, cfg, False)
    runs = {"interleaved spec": [], "interleaved alone": [], "whole spec": [], "whole alone": []}
    for r in range(args.repeats):
        for n, ids in enumerate(prompts):
            spec, alone = interleaved(pair, ids, cfg)
            runs["interleaved spec"].append(spec), runs["interleaved alone"].append(alone)
            for side in (True, False) if (r + n) % 2 == 0 else (False, True):  # whole runs, the order alternated
                runs["whole spec" if side else "whole alone"].append(whole(pair, ids, cfg, side))
    for name, got in runs.items():
        print(f"{name:18s} {rate(got):7.1f} tok/s")
    print(f"speedup: interleaved {rate(runs['interleaved spec']) / rate(runs['interleaved alone']):.3f}x, "
          f"whole runs alternated {rate(runs['whole spec']) / rate(runs['whole alone']):.3f}x "
          f"({args.repeats} repeats x {len(prompts)} prompts, {args.max_new_tokens} tokens)")


if __name__ == "__main__":
    main()
