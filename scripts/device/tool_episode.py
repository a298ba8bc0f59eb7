"""One scripted tool episode built from an expert, through the real tools-mode sweep (issue 44's
first step): each tool's cold and median warm latency, the per-rank `profile` summary, and a
check that nothing the model was sent names a harness path, variable or secret.

    python3 -m scripts.device.tool_episode --device cuda --world-size 2   # allreduce expert, GPUs
    python3 -m scripts.device.tool_episode --device cpu                   # sum_ranks fixture, gloo

The model is the scripted ToolServer (tests/agent/tool_server.py, real HTTP, called through
litellm); the sweep is `python3 sweep.py mode=tools attempts=1 ...`, so every tool runs on
the node's evaluator, in the sandbox, as in a real episode. The script: check(a wrong module),
then --rounds rounds of [check, benchmark, profile](the expert) and run(a script), then a
probe run that prints the sandbox's environment, working directory and sys.path, then
submit(the expert). A tool's first call is cold (judges, prebuild); the median of the rest is
its warm latency. Issue 17 asks for a warm `check` of at most 5 s (exit 1 past it, with --strict).

The leaks are reported in two parts: in the prompts and the other tools' results, and in the
probe's output (what a candidate's script can print of its sandbox). Canary secrets are put in
the sweep's environment (names the engine treats as secret, and a
PKB_ harness variable); the leak check looks for them, the repo, the work folder, $HOME, the
interpreter's prefix, every PYTHONPATH entry, "PKB_", "pkb_sbx_" and "site-packages" in every
request body the model server received (prompts and tool results as the model sees them).
Writes tool_episode_<device>.json (and the model's requests) to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# the benchmark's episode pieces, so that both run the same problem, candidates and sweep
from scripts.bench_tools_sweep import (SCRIPT, WRONG, journal_records, problem_for, sweep_env,
                                      tools_sweep_overrides)
from tests.agent.tool_server import ToolServer, Turn, step_of

REPO = Path(__file__).resolve().parents[2]
PROBE = ("import os, sys\n"
         "print('ENV', sorted(os.environ.items()))\nprint('CWD', os.getcwd())\nprint('PATH', sys.path)\n")
CHECK_WARM_LIMIT_S = 5.0


def plan(good: str, rounds: int) -> list[list[tuple[str, dict]]]:
    """The model's turns: each a list of (tool, arguments)."""
    turns = [[("check", {"source": WRONG})]]
    for _ in range(rounds):
        turns += [[("check", {"source": good})], [("benchmark", {"source": good}), ("profile", {"source": good})],
                  [("run", {"script": SCRIPT})]]
    return turns + [[("run", {"script": PROBE})], [("submit", {"source": good})]]


def leaks(seen: str, needles: dict[str, str]) -> list[dict]:
    out = []
    for label, needle in needles.items():
        at = seen.find(needle)
        if needle and at >= 0:
            out.append({"what": label, "needle": needle[:80], "context": seen[max(0, at - 120):at + 120]})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=4, help="rounds of check/benchmark/profile/run after the first")
    ap.add_argument("--cache-dir", default=os.path.expanduser("~/.cache/pkb_ray"))
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/tool_episode"))
    ap.add_argument("--strict", action="store_true", help=f"exit 1 when warm check > {CHECK_WARM_LIMIT_S} s")
    args = ap.parse_args()
    problem, source, good = problem_for(args.device)
    turns = plan(good, args.rounds)
    work = Path(tempfile.mkdtemp(prefix="pkb_tool_episode_"))
    name = f"tool_episode_{args.device}"
    canary = {"OPENAI_API_KEY": "sk-canary-" + secrets.token_hex(12),
              "PKB_CANARY_TOKEN": "pkbcanary" + secrets.token_hex(12),
              "MY_SERVICE_SECRET": "svc-canary-" + secrets.token_hex(12)}
    overrides = tools_sweep_overrides(args, problem, source, work, name, 1,
                                      [f"mode.tools.limits.tool_calls={sum(len(t) for t in turns) + 2}",
                                       f"mode.tools.limits.model_calls={len(turns) + 3}"])
    env = sweep_env() | canary

    def script(body: dict) -> Turn:
        step = step_of(body)
        calls = turns[min(step, len(turns)) - 1]
        return Turn(f"Step {step}.", calls)

    with ToolServer(script) as server:
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, str(REPO / "sweep.py"), f"model.api_base={server.url}", *overrides],
                              cwd=work, env=env, capture_output=True, text=True)
        sweep_s = time.monotonic() - t0
        bodies = list(server.bodies)
    print(proc.stdout[-2500:], proc.stderr[-2500:] if proc.returncode else "", sep="\n")
    sweep_dir = work / "sweeps" / name
    recs = journal_records(sweep_dir)
    done = [r for r in recs if r.get("kind") == "tool_result"]
    tools = {}
    for tool in ("check", "benchmark", "profile", "run", "submit"):
        rs = [r for r in done if r["tool"] == tool]
        if tool in ("check", "run"):  # the wrong module's check and the probe run are not timed calls
            rs = rs[1:] if tool == "check" else rs[:-1]
        walls = [r["wall_s"] for r in rs]
        if walls:
            warm = walls[1:] or walls
            tools[tool] = {"calls": len(walls), "cold_wall_s": round(walls[0], 3),
                           "median_warm_wall_s": round(statistics.median(warm), 3),
                           "median_warm_device_s": round(statistics.median([r["device_s"] for r in rs][1:] or
                                                                           [r["device_s"] for r in rs]), 3),
                           "all_ok": all((r.get("result") or {}).get("correct", (r.get("result") or {}).get("ok"))
                                         for r in rs)}
    profiles = [r["result"] for r in done if r["tool"] == "profile" and r.get("result")]
    per_rank = []
    if profiles:
        last = profiles[-1]
        per_rank = [{"rank": rk["rank"], "profiled_calls": rk.get("profiled_calls"),
                     "top": [(row["name"][:60], row["calls"], row["self_us"]) for row in rk.get("rows", [])[:5]],
                     "copies": [(row["name"][:60], row["calls"], row["self_us"]) for row in rk.get("copies", [])[:3]],
                     "nvlink_tx_rx_bytes": (rk.get("nvlink_tx_bytes"), rk.get("nvlink_rx_bytes")),
                     "nvlink_note": rk.get("nvlink_note", "")}
                    for rk in last.get("ranks", [])]
    probe = [r["content"] for r in done if r["tool"] == "run"][-1:] or [""]
    needles = {f"canary {k}": v for k, v in canary.items()}
    needles.update({"repo": str(REPO), "work folder": str(work), "home": os.path.expanduser("~") + "/",
                    "interpreter prefix": sys.prefix + "/", "cache dir": args.cache_dir, "/opt/pkb": "/opt/pkb",
                    "PKB_ variable": "PKB_", "sandbox dir": "pkb_sbx_", "site-packages": "site-packages"})
    for i, p in enumerate(x for x in os.environ.get("PYTHONPATH", "").split(os.pathsep) if len(x) > 4):
        needles[f"PYTHONPATH[{i}]"] = p
    # What the model wrote itself (its assistant turns: the code it submits, whose comments may
    # name anything, e.g. the allreduce expert's PKB_EXPERT_FAST knob) comes back in every later
    # request body; only what the harness sent it (prompts, tool results) can leak.
    seen = json.dumps([{**b, "messages": [m for m in b.get("messages", []) if m.get("role") != "assistant"]}
                       for b in bodies])
    # The probe's output (the sandbox's environment, as a model would read it) is judged apart
    # from the rest of what the model was sent: prompts and the other tools' results.
    probe_seen = json.dumps(probe[0])[1:-1]
    found = leaks(seen.replace(probe_seen, "<probe>") if probe_seen else seen, needles)
    found_probe = leaks(probe_seen, needles)
    check_warm = tools.get("check", {}).get("median_warm_wall_s")
    end = [r for r in recs if r.get("kind") == "end"]
    result = {"command": "python3 " + shlex.join(["-m", "scripts.device.tool_episode", *sys.argv[1:]]),
              "device": args.device, "problem": problem, "world_size": args.world_size, "rounds": args.rounds,
              "sweep_exit": proc.returncode, "sweep_wall_s": round(sweep_s, 1), "model_requests": len(bodies),
              "end": {k: end[-1].get(k) for k in ("reason", "detail", "usage")} if end else None, "tools": tools, "check_warm_within_5s": check_warm is not None
              and check_warm <= CHECK_WARM_LIMIT_S, "profile_per_rank": per_rank,
              "profile_measures": profiles[-1].get("measures") if profiles else None,
              "probe_run_as_the_model_saw_it": probe[0][:3000], "leaks": found, "probe_leaks": found_probe,
              "needles_checked": sorted(needles), "load_average_1m": os.getloadavg()[0], "cpus": os.cpu_count(),
              "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"tool_episode_{args.device}.json").write_text(json.dumps(result, indent=1))
    (out / f"tool_episode_{args.device}_requests.json").write_text(json.dumps(bodies))
    print(f"sweep exit {proc.returncode} in {sweep_s:.0f} s; {len(bodies)} model requests; end {result['end']}")
    print(f"{'tool':10s} {'calls':>5s} {'cold s':>8s} {'warm median s':>14s} {'warm device-s':>14s} ok")
    for t, r in tools.items():
        print(f"{t:10s} {r['calls']:5d} {r['cold_wall_s']:8.3f} {r['median_warm_wall_s']:14.3f} "
              f"{r['median_warm_device_s']:14.3f} {r['all_ok']}")
    print(f"warm check {check_warm} s: {'within' if result['check_warm_within_5s'] else 'NOT within'} "
          f"{CHECK_WARM_LIMIT_S} s")
    print(f"profile ({result['profile_measures']}), per rank, top ops (name, calls, self us):")
    for rk in per_rank:
        print(f"  rank {rk['rank']} ({rk['profiled_calls']} calls): {rk['top']}  copies: {rk['copies']}  "
              f"NVLink tx/rx bytes: {rk['nvlink_tx_rx_bytes']} {rk['nvlink_note']}")
    print("probe run, as the model saw it:", probe[0][:1500].replace("\n", " | "))
    print(f"leak check over {len(needles)} needles, prompts and tool results:",
          "none found" if not found else json.dumps(found, indent=1))
    print("leak check, the probe run's output:", "none found" if not found_probe else json.dumps(found_probe, indent=1))
    ok = proc.returncode == 0 and not found and not found_probe and bool(tools) and (result["check_warm_within_5s"] or not args.strict)
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
