"""GPU groups on a real multi-GPU node (issue 27): interference and throughput.

    python scripts/bench_groups_gpu.py --world-size 2 [--out DIR]     # 4 or 8 GPUs
    bash scripts/bench_groups_gpu.sh                                    # ws 2 (and 4 on 8 GPUs)

Runs the engine as a node actor does (engine/node/gpu_groups.py lends the groups; one thread per
evaluation, each with its group's judges and sandboxed workers), without Ray:
  1. exclusive: each of 10 problems (the five collective experts, five references of other
     categories) evaluated alone on the node;
  2. grouped: each again on one group while every other group evaluates other problems;
     per problem: both speedups, their ratio and a conservative interval (the ratio of the
     two speedup intervals' opposite ends);
  3. throughput: the 10 problems once each, one at a time (exclusive), then on every group
     at once (each group its own rotation of the 10): evaluations per hour per node;
  4. self-timing under co-tenancy: each reference timed against itself on one group while
     the others are busy: the share within 1.00 +- 0.03 (and its interval holding 1.0);
  5. topology: `nvidia-smi topo -m` and the groups chosen.
Targets (issue 27): grouped speedups within 2% of exclusive for >= 90% of the problems;
throughput at world size 2 >= 3.5x exclusive on 8 GPUs (1.8x on 4).
Results: <out>/groups_ws<W>.{json,md} and topo.txt, with the command and the machine.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

COLLECTIVE_EXPERTS = ("allreduce", "allgather", "alltoall", "broadcast", "reduce_scatter")
OTHER_REFERENCES = ("gemm_allreduce", "ddp_bucket_allreduce", "sp_rmsnorm_allgather", "moe_dispatch",
                    "vocab_parallel_embedding")
"""Five references of other categories, from the representative set (conf/problems)."""


def node_gpus() -> list[int]:
    out = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
                         capture_output=True, text=True, check=True).stdout
    return [int(x) for x in out.split()]


class Bench:
    def __init__(self, args, groups, problems) -> None:
        from pkb_ray.config.schema import EvalConfig, TimeoutConfig, TimingConfig

        self.args, self.groups, self.problems = args, groups, problems
        self.timing = TimingConfig()
        self.timeouts = TimeoutConfig(start_s=120.0, load_s=120.0, trial_s=60.0, timing_s=120.0)

    def request(self, pid: str, candidate: str, tag: str):
        from pkb_ray.engine import EvalRequest

        problem = self.problems[pid]
        source = problem.expert_source if candidate == "expert" else problem.reference_source
        return EvalRequest(problem_id=pid, problems_source="builtin", candidate_source=source, device="cuda",
                           size="bench", cell_id=f"groups/{pid}/{candidate}/{tag}",
                           eval=EvalConfig(world_size=self.args.world_size, trials=2,
                                           guard=candidate == "expert", timing=self.timing,
                                           timeouts=self.timeouts, cache_dir=self.args.cache_dir))

    def evaluate(self, pid: str, candidate: str, tag: str) -> dict:
        from pkb_ray.engine import evaluate

        t0 = time.monotonic()
        with self.groups.lend(self.args.world_size) as lease:
            res = evaluate(self.request(pid, candidate, tag), lease=lease)
        return {"problem": pid, "candidate": candidate, "correct": res.correct,
                "failure": res.failure.value if res.failure else None, "message": res.message[:200],
                "speedup": res.speedup, "ci": [res.speedup_ci_low, res.speedup_ci_high],
                "gpus": res.gpus, "gpu_link": res.gpu_link, "co_tenancy": lease.co_tenancy,
                "wall_s": round(time.monotonic() - t0, 2)}

    def which(self, pid: str) -> str:
        return "expert" if pid in COLLECTIVE_EXPERTS else "reference"

    def busy_others(self, stop: threading.Event, skip: str) -> list[threading.Thread]:
        """Every group but one evaluating other problems until `stop`."""
        others = [p for p in self.problems if p != skip]

        def loop(offset: int) -> None:
            i = offset
            while not stop.is_set():
                pid = others[i % len(others)]
                self.evaluate(pid, self.which(pid), "load")
                i += 1

        n = self.groups.slots(self.args.world_size) - 1
        threads = [threading.Thread(target=loop, args=(3 * k,), daemon=True) for k in range(n)]
        for t in threads:
            t.start()
        time.sleep(1.0)  # let them take their groups
        return threads

    def beside_load(self, pid: str, candidate: str, tag: str) -> dict:
        stop = threading.Event()
        threads = self.busy_others(stop, pid)
        try:
            return self.evaluate(pid, candidate, tag)
        finally:
            stop.set()
            for t in threads:
                t.join()

    def throughput(self, concurrent: bool) -> dict:
        ids = list(self.problems)
        streams = self.groups.slots(self.args.world_size) if concurrent else 1
        t0 = time.monotonic()
        rows: list[dict] = []

        def stream(k: int) -> None:
            for i in range(len(ids)):
                pid = ids[(i + 3 * k) % len(ids)]
                rows.append(self.evaluate(pid, self.which(pid), f"tp{k}"))

        threads = [threading.Thread(target=stream, args=(k,)) for k in range(streams)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - t0
        return {"streams": streams, "evaluations": len(rows), "wall_s": round(wall, 1),
                "evaluations_per_hour": round(len(rows) / wall * 3600, 1),
                "correct": sum(r["correct"] for r in rows)}


def ratio(grouped: dict, alone: dict) -> dict:
    if not (grouped["speedup"] and alone["speedup"]):
        return {"ratio": None, "ci": [None, None], "within_2pct": False}
    r = grouped["speedup"] / alone["speedup"]
    (glo, ghi), (elo, ehi) = grouped["ci"], alone["ci"]
    ci = [glo / ehi if glo and ehi else None, ghi / elo if ghi and elo else None]
    return {"ratio": round(r, 4), "ci": [round(x, 4) if x else None for x in ci], "within_2pct": abs(r - 1) <= 0.02}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--cache-dir", default="/tmp/pkb_groups_bench")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / f"groups_gpu_{time.strftime('%Y-%m-%d')}"))
    ap.add_argument("--ids", default="", help="comma-separated problems (default: the ten of issue 27)")
    args = ap.parse_args()

    from pkb_ray.engine.node import gpu_groups
    from pkb_ray.problems import load_problems

    ids = [i for i in args.ids.split(",") if i] or list(COLLECTIVE_EXPERTS + OTHER_REFERENCES)
    loaded = load_problems("builtin", ids)
    problems = {p: loaded.problems[p] for p in ids if p in loaded.problems
                and not loaded.problems[p].spec.world_size_refusal(args.world_size, tests=True)}
    gpus = node_gpus()
    topo = gpu_groups.measure(gpus)
    groups = gpu_groups.GpuGroups(gpus, topo)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    topo_text = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True).stdout
    (out / "topo.txt").write_text(topo_text)
    print(f"{len(gpus)} GPUs, {groups.slots(args.world_size)} groups of {args.world_size}; problems: {list(problems)}",
          flush=True)
    bench = Bench(args, groups, problems)

    per_problem = []
    for pid in problems:
        cand = bench.which(pid)
        alone = bench.evaluate(pid, cand, "exclusive")
        grouped = bench.beside_load(pid, cand, "grouped")
        row = {"problem": pid, "candidate": cand, "exclusive": alone, "grouped": grouped, **ratio(grouped, alone)}
        per_problem.append(row)
        print(json.dumps({k: row[k] for k in ("problem", "ratio", "ci", "within_2pct")}), flush=True)
    self_rows = []
    for pid in problems:
        r = bench.beside_load(pid, "reference", "self")
        lo, hi = r["ci"]
        r["within_3pct"] = bool(r["speedup"]) and abs(r["speedup"] - 1) <= 0.03
        r["ci_holds_1"] = bool(lo and hi and lo <= 1 <= hi)
        self_rows.append(r)
    tp_exclusive = bench.throughput(concurrent=False)
    tp_grouped = bench.throughput(concurrent=True)
    measured = [r for r in per_problem if r["ratio"] is not None]
    figures = {
        "command": "python scripts/bench_groups_gpu.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
        "machine": subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                                  capture_output=True, text=True).stdout.split("\n")[0] + f" x{len(gpus)}",
        "world_size": args.world_size, "groups": groups.slots(args.world_size),
        "topology_source": topo.source,
        "groups_chosen": sorted({r["grouped"]["gpus"] + " " + r["grouped"]["gpu_link"] for r in per_problem}),
        "share_grouped_within_2pct": f"{sum(r['within_2pct'] for r in measured)}/{len(measured)}",
        "throughput_exclusive_per_hour": tp_exclusive["evaluations_per_hour"],
        "throughput_grouped_per_hour": tp_grouped["evaluations_per_hour"],
        "throughput_ratio": round(tp_grouped["evaluations_per_hour"] / tp_exclusive["evaluations_per_hour"], 2),
        "self_timing_within_3pct": f"{sum(r['within_3pct'] for r in self_rows)}/{len(self_rows)}",
        "self_timing_ci_holds_1": f"{sum(r['ci_holds_1'] for r in self_rows)}/{len(self_rows)}",
        "per_problem": per_problem, "self_timing": self_rows,
        "throughput": {"exclusive": tp_exclusive, "grouped": tp_grouped},
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    stem = f"groups_ws{args.world_size}"
    (out / f"{stem}.json").write_text(json.dumps(figures, indent=2) + "\n")
    md = [f"# GPU groups, world size {args.world_size}", "", f"Command: `{figures['command']}`", "",
          f"Machine: {figures['machine']}; groups chosen: {figures['groups_chosen']}", "",
          "| problem | exclusive | grouped (co-tenancy) | ratio | interval |", "|---|---|---|---|---|"]
    for r in per_problem:
        e, g = r["exclusive"], r["grouped"]
        md.append(f"| {r['problem']} ({r['candidate']}) | {e['speedup']} | {g['speedup']} ({g['co_tenancy']}) | "
                  f"{r['ratio']} | {r['ci']} |")
    md += ["", *(f"- {k}: {figures[k]}" for k in ("share_grouped_within_2pct", "throughput_exclusive_per_hour",
                                                   "throughput_grouped_per_hour", "throughput_ratio",
                                                   "self_timing_within_3pct", "self_timing_ci_holds_1"))]
    (out / f"{stem}.md").write_text("\n".join(md) + "\n")
    print("\n".join(md), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
