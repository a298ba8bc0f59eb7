"""Two evaluations of the same honest file on a loaded CPU machine: do their intervals
overlap, or does each say `unmeasurable`?

    PYTHONPATH=$PWD python scripts/loaded_pairs.py [--pairs 20] [--spinners 2] [--out DIR]

The judges import the fixture's loader (tests/...): without the repository on PYTHONPATH
every evaluation fails, and each pair prints why.

Starts --spinners processes that spin on the CPU for the whole run, --duty of each 100 ms
(0 spinners: whatever else loads the machine), then evaluates the honest exchange (the fixture problem's store_exchange.py,
world size 2, cpu, the default timing settings) twice per pair. A pair is sound when both
intervals overlap, or when either evaluation gave no figure and said why (a figure drawn
from the load is what must not happen). Results: <out>/loaded_pairs.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

from pkb_ray.config.schema import EvalConfig, TimingConfig
from pkb_ray.engine import HARNESS_VERSION, EvalRequest, evaluate
from pkb_ray.problems.includes import read_candidate_file

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "engine" / "fixtures"
LOADER = "tests.engine.fixtures.loaders:load_fixture_problem"


def one(cache_dir: str) -> dict:
    source = read_candidate_file(FIXTURES / "candidates" / "store_exchange.py", root=REPO / "tests" / "engine")
    res = evaluate(EvalRequest(problem_id="sum_ranks", problems_source=str(FIXTURES / "problems"),
                               candidate_source=source, device="cpu", size="small",
                               eval=EvalConfig(world_size=2, trials=5, timing=TimingConfig(), cache_dir=cache_dir)),
                   load_problem=LOADER)
    t = res.timing
    return {"correct": res.correct, "failure": res.failure.value if res.failure else None,
            "message": "" if res.correct else res.message[:300],
            "speedup": res.speedup, "ci": [res.speedup_ci_low, res.speedup_ci_high],
            "unmeasurable": t.unmeasurable if t else "", "foreign_cpu": t.foreign_cpu if t else None,
            "cpu_pressure": t.cpu_pressure if t else None, "flags": res.flags}


def sound(a: dict, b: dict) -> bool:
    if not (a["correct"] and b["correct"]):
        return False
    if a["speedup"] is None or b["speedup"] is None:
        return bool(a["unmeasurable"] or b["unmeasurable"])
    return a["ci"][0] <= b["ci"][1] and b["ci"][0] <= a["ci"][1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--spinners", type=int, default=2)
    ap.add_argument("--duty", type=float, default=1.0,
                    help="share of each 100 ms a spinner spins (below 1: a partial load, under the limit)")
    ap.add_argument("--tag", default="", help="suffix of the result files")
    ap.add_argument("--cache-dir", default="/tmp/pkb_loaded_pairs")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "loaded_pairs"))
    args = ap.parse_args()
    loop = ("import time\nwhile True:\n    t = time.monotonic()\n    while time.monotonic() - t < {on}: pass\n"
            "    time.sleep({off})\n").format(on=0.1 * args.duty, off=0.1 * (1 - args.duty))
    spin = [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(args.spinners)]
    pairs = []
    try:
        for i in range(args.pairs):
            a, b = one(args.cache_dir), one(args.cache_dir)
            pairs.append({"a": a, "b": b, "sound": sound(a, b)})
            fmt = lambda e: (f"{e['speedup']:.3f} [{e['ci'][0]:.3f}, {e['ci'][1]:.3f}]" if e["speedup"]  # noqa: E731
                             else f"no figure ({(e['unmeasurable'] or e['message'] or 'failed')[:120]})")
            print(f"pair {i}: {fmt(a)} | {fmt(b)} -> {'sound' if pairs[-1]['sound'] else 'EXCLUSIVE'}", flush=True)
    finally:
        for p in spin:
            p.kill()
            p.wait()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    n_sound = sum(p["sound"] for p in pairs)
    figured = sum(1 for p in pairs for e in (p["a"], p["b"]) if e["speedup"] is not None)
    summary = {"command": "python " + " ".join(shlex.quote(a) for a in sys.argv), "harness_version": HARNESS_VERSION,
               "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "pairs": pairs, "sound": n_sound,
               "evaluations_with_a_figure": figured}
    (out / f"loaded_pairs{args.tag}.json").write_text(json.dumps(summary, indent=1))
    (out / f"loaded_pairs{args.tag}.md").write_text(
        f"# The same honest file twice, {args.pairs} pairs, {args.spinners} spinner(s) at {args.duty:.0%} beside\n\n"
        f"Command: `{summary['command']}`\n\nHarness {HARNESS_VERSION}, {summary['when']}.\n\n"
        f"Sound pairs (intervals overlap, or no figure with a reason): {n_sound} of {len(pairs)}; "
        f"evaluations that gave a figure: {figured} of {2 * len(pairs)}.\n")
    print(f"{n_sound} of {len(pairs)} pairs sound; {figured} evaluations gave a figure")
    return 0


if __name__ == "__main__":
    sys.exit(main())
