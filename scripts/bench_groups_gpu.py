"""GPU groups on a real multi-GPU node (issues 27 and 40): interference and throughput.

    python scripts/bench_groups_gpu.py --world-size 2 [--repeats 3] [--budget-s 500] [--out DIR]
    bash scripts/bench_groups_gpu.sh                                    # ws 2 (and 4 on 8 GPUs)

Runs the engine as a node actor does (engine/node/gpu_groups.py lends the groups; one thread
per group, each with its group's judges and sandboxed workers; measure() under the lease, the
verdict after it, as NodeEvaluator.evaluate), without Ray:
  0. set-up: the hardware profile, then every group's judges and first sandboxes at once;
  1. rounds (--repeats, default 3): each of 10 problems (the five collective experts, five
     references of other categories) once exclusive (the node held whole, the groups taken
     in turn), then once grouped (one group each, every other group kept busy with
     evaluations of its own until the round's last one ends). Per problem the exclusive and
     grouped speedups are compared as distributions: `within` or `moved` (the rule is at
     compare()). Per phase of an evaluation (the result's own evidence seconds: the node's
     and rank 0's judge's), where a grouped one spends the time it takes beyond one alone;
  2. throughput: the exclusive rounds are the 10 problems one at a time; then every group at
     once, each its own rotation of the 10: evaluations per hour per node;
  3. self-timing under co-tenancy (--self-timing; by default only where it fits the budget):
     each reference against itself on one group while the others are busy;
  4. the machine: `nvidia-smi topo -m`, the groups, each GPU's pinned cores, the cores spare
     sandboxes set up on and the hyperthread siblings of the pinned ones, and the pinned
     cores' clock during exclusive and grouped evaluations (CoreClock).
--budget-s: the run ends within that many seconds of its start (a round, the throughput or
the self-timing phase is left out where the evaluations measured so far say it would not
fit; the results say what was left out). 4 x H200 at world size 2: about 4.5 s an exclusive
evaluation and 5.8 s a grouped one.
Targets (issues 27, 40): a grouped speedup within the exclusive spread for >= 90% of the
problems; throughput at world size 2 >= 3.5x exclusive on 8 GPUs (1.8x on 4).
Results: <out>/groups_ws<W>.{json,md} and topo.txt, with the command and the machine,
rewritten after every phase (a run cut off keeps what it measured).
`--device cpu --fake-gpus 4` runs the same phases on CPU ranks (small sizes): a smoke test
of this script, no measurement.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

COLLECTIVE_EXPERTS = ("allreduce", "allgather", "alltoall", "broadcast", "reduce_scatter")
OTHER_REFERENCES = ("gemm_allreduce", "ddp_bucket_allreduce", "sp_rmsnorm_allgather", "moe_dispatch",
                    "vocab_parallel_embedding")
"""Five references of other categories, from the representative set (conf/problems)."""

PRIOR_EXCLUSIVE_S, PRIOR_GROUPED_S = 4.5, 5.8
"""Seconds per evaluation on 4 x H200 at world size 2 (scripts/bench_groups_gpu.py, issue 40):
the budget's guess until this run has measured its own."""
MARGIN_S = 20.0
"""Kept from the budget for writing the results and stopping the judges."""
BUSY_MIN = 0.8
"""A grouped evaluation counts as grouped where every other group held an evaluation for at
least this share of its time (between two evaluations a group is idle for a moment)."""


def node_gpus(device: str, fake: int) -> list[int]:
    if device != "cuda":
        return list(range(fake))
    out = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
                         capture_output=True, text=True, check=True).stdout
    return [int(x) for x in out.split()]


def median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


class Bench:
    def __init__(self, args: argparse.Namespace, groups: Any, problems: dict, partition: list[tuple[int, ...]]) -> None:
        from pkb_ray.config.schema import EvalConfig, TimeoutConfig, TimingConfig

        self.args, self.groups, self.problems, self.partition = args, groups, problems, partition
        self.t0 = time.monotonic()
        self.rows: list[dict] = []
        self.lock = threading.Lock()
        self.notes: list[str] = []
        self.eval_config = lambda guard: EvalConfig(
            world_size=args.world_size, trials=2, guard=guard, timing=TimingConfig(), cache_dir=args.cache_dir,
            timeouts=TimeoutConfig(start_s=120.0, load_s=120.0, trial_s=60.0, timing_s=120.0))

    # ------------------------------------------------------------------ one evaluation
    def request(self, pid: str, candidate: str, tag: str) -> Any:
        from pkb_ray.engine import EvalRequest

        problem = self.problems[pid]
        source = problem.expert_source if candidate == "expert" else problem.reference_source
        return EvalRequest(problem_id=pid, problems_source="builtin", candidate_source=source,
                           device=self.args.device, size="bench" if self.args.device == "cuda" else "small",
                           cell_id=f"groups/{pid}/{candidate}/{tag}", eval=self.eval_config(candidate == "expert"))

    def grouped(self, pid: str, candidate: str, tag: str, round_: int | None, stream: int) -> dict:
        """One evaluation on a group the node lends (others may run beside it)."""
        from pkb_ray.engine.node.evaluation import measure

        req = self.request(pid, candidate, tag)
        with self.groups.lend(self.args.world_size) as lease:
            t_in = time.monotonic()
            found = measure(req, lease=lease)
            t_out = time.monotonic()
        return self.record(pid, candidate, tag, round_, stream, found, lease.co_tenancy, t_in, t_out)

    def exclusive(self, pid: str, candidate: str, round_: int, group: tuple[int, ...]) -> dict:
        """One evaluation on `group` with the whole node held: nothing else runs on it (as
        in exclusive mode), and exclusive figures come from every group of the node in turn,
        as grouped ones do."""
        from pkb_ray.engine.node.evaluation import measure
        from pkb_ray.engine.node.gpu_groups import Lease

        req = self.request(pid, candidate, "exclusive")
        with self.groups.lend(len(self.groups.gpus)):
            lease = Lease(group, self.groups.topology.link(group), exclusive=True, node_gpus=self.groups.gpus)
            t_in = time.monotonic()
            found = measure(req, lease=lease)
            t_out = time.monotonic()
        return self.record(pid, candidate, "exclusive", round_, 0, found, 0, t_in, t_out)

    def record(self, pid: str, candidate: str, tag: str, round_: int | None, stream: int, found: Any,
               co_tenancy: int, t_in: float, t_out: float) -> dict:
        from pkb_ray.engine.node.evaluation import conclude

        t_c = time.monotonic()
        res = conclude(found, co_tenancy)  # after the lease, as NodeEvaluator.evaluate
        tm = res.timing
        seconds = {k: v for k, v in res.evidence.get("seconds", {}).items() if not k.startswith("timing.probe.")}
        row = {"problem": pid, "candidate": candidate, "tag": tag, "round": round_, "stream": stream,
               "correct": res.correct, "failure": res.failure.value if res.failure else None,
               "message": res.message[:200], "speedup": res.speedup,
               "ci": [res.speedup_ci_low, res.speedup_ci_high], "gpus": res.gpus, "gpu_link": res.gpu_link,
               "co_tenancy": co_tenancy, "t_start": round(t_in - self.t0, 3), "t_end": round(t_out - self.t0, 3),
               "wall_s": round(t_out - t_in, 3), "conclude_s": round(time.monotonic() - t_c, 3),
               "samples": tm.samples if tm else 0, "stopped": tm.stopped if tm else "",
               "mode_source": tm.mode_source if tm else "", "cpu_pressure": tm.cpu_pressure if tm else None,
               "foreign_cpu": tm.foreign_cpu if tm else None, "seconds": seconds,
               "sandbox_taken": res.evidence.get("sandbox_taken", "")}
        with self.lock:
            self.rows.append(row)
        print(json.dumps({k: row[k] for k in ("tag", "round", "problem", "gpus", "speedup", "wall_s", "samples",
                                               "co_tenancy")}), flush=True)
        return row

    def which(self, pid: str) -> str:
        """The candidate a problem is evaluated with (on cpu every one is its reference: the
        experts need symmetric memory)."""
        return "expert" if pid in COLLECTIVE_EXPERTS and self.args.device == "cuda" else "reference"

    # ------------------------------------------------------------------ phases
    def prestart(self) -> None:
        """The hardware profile, then every group's judges and first sandboxes at once (the
        first evaluation of each group would otherwise pay for them, and beside others)."""
        from pkb_ray.engine.node import evaluation

        if self.args.device == "cuda":
            evaluation.node_profile("cuda", str(Path(self.args.cache_dir).expanduser()), tuple(self.groups.gpus),
                                    require_facts=False)
        first = next(iter(self.problems))
        req = self.request(first, self.which(first), "prestart")
        threads = [threading.Thread(target=evaluation.prestart, args=(req, group),
                                    kwargs={"node_gpus": tuple(self.groups.gpus)}) for group in self.partition]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def exclusive_round(self, round_: int) -> float:
        """Each problem once, one at a time on one group, as exclusive mode runs them back to
        back (each spare sandbox has one evaluation's time to set up); the rounds take the
        groups in turn. Returns the round's wall."""
        t = time.monotonic()
        group = self.partition[round_ % len(self.partition)]
        for pid in self.problems:
            self.exclusive(pid, self.which(pid), round_, group)
        return time.monotonic() - t

    def grouped_block(self, tasks: list[tuple[str, str]], tag: str, round_: int | None) -> float:
        """`tasks` (problem, candidate) on the node's groups, every group busy until the last
        of them ends: a group with no task left evaluates fillers (another problem of the
        kind it ran last: the spare sandbox a group keeps is started for one guard setting).
        Each task's row gets `busy_share`; returns the block's wall."""
        queue = collections.deque(tasks)
        left = [len(tasks)]
        cond = threading.Lock()
        block: list[dict] = []

        def stream(k: int) -> None:
            last, i = tasks[k % len(tasks)], k
            while True:
                with cond:
                    task = queue.popleft() if queue else None
                    if task is None and left[0] == 0:
                        return
                if task is not None:
                    block.append(self.grouped(task[0], task[1], tag, round_, k))
                    with cond:
                        left[0] -= 1
                    last = task
                    continue
                # A filler of the same candidate kind (an expert only where the problem has one).
                same = [p for p in self.problems if p != last[0]
                        and (last[1] == "reference" or self.which(p) == "expert")] or [last[0]]
                block.append(self.grouped(same[i % len(same)], last[1], "load", round_, k))
                i += 1

        t = time.monotonic()
        threads = [threading.Thread(target=stream, args=(k,)) for k in range(len(self.partition))]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        for row in block:
            row["busy_share"] = round(busy_share(row, block), 3)
        return time.monotonic() - t

    def throughput_grouped(self) -> dict:
        """Every group at once, each its own rotation of the problems."""
        ids = list(self.problems)
        t = time.monotonic()

        def stream(k: int) -> None:
            for i in range(len(ids)):
                pid = ids[(i + 3 * k) % len(ids)]
                self.grouped(pid, self.which(pid), "throughput", None, k)

        threads = [threading.Thread(target=stream, args=(k,)) for k in range(len(self.partition))]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        wall = time.monotonic() - t
        n = sum(r["tag"] == "throughput" for r in self.rows)
        return {"streams": len(threads), "evaluations": n, "wall_s": round(wall, 1),
                "evaluations_per_hour": round(n / wall * 3600, 1),
                "correct": sum(r["tag"] == "throughput" and r["correct"] for r in self.rows)}

    # ------------------------------------------------------------------ the budget
    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def per_eval_s(self, tag: str, prior: float) -> float:
        walls = [r["wall_s"] + r["conclude_s"] for r in self.rows if r["tag"] == tag]
        return median(walls) or prior

    def cost_s(self, what: str) -> float:
        """Seconds `what` (round, throughput, self) will take, from this run's evaluations."""
        n, groups = len(self.problems), len(self.partition)
        excl = self.per_eval_s("exclusive", PRIOR_EXCLUSIVE_S)
        grp = self.per_eval_s("grouped", PRIOR_GROUPED_S)
        block = (math.ceil(n / groups) + 1) * grp  # the tasks, and a filler that ends after them
        return {"round": n * excl + block, "throughput": n * grp, "self": block}[what]

    def fits(self, *what: str) -> bool:
        return self.elapsed() + sum(self.cost_s(w) for w in what) + MARGIN_S <= self.args.budget_s


class CoreClock:
    """The clock of the pinned cores (MHz, sampled every half second), by what the bench is
    doing: a busier node may run every core slower (turbo budget), which stretches every
    CPU-bound phase of a grouped evaluation (imports, NVRTC, the judges' host work) without
    anything of ours serialising it. {} where the machine does not say (a VM's cpuinfo may
    give a constant)."""

    def __init__(self, cores: list[int]) -> None:
        self.cores, self.tag = cores, ""
        self.samples: dict[str, list[float]] = collections.defaultdict(list)
        self.stop = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def read(self) -> list[float]:
        mhz = []
        for c in self.cores:
            try:
                with open(f"/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_cur_freq") as f:
                    mhz.append(int(f.read()) / 1e3)
            except (OSError, ValueError):
                break
        if len(mhz) == len(self.cores):
            return mhz
        try:
            text = Path("/proc/cpuinfo").read_text()
        except OSError:
            return []
        by_cpu, cpu = {}, None
        for line in text.splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "processor":
                cpu = int(value)
            elif key.strip() == "cpu MHz" and cpu is not None:
                by_cpu[cpu] = float(value)
        return [by_cpu[c] for c in self.cores if c in by_cpu]

    def _run(self) -> None:
        while not self.stop.wait(0.5):
            tag, mhz = self.tag, self.read()
            if tag and mhz:
                self.samples[tag].append(statistics.median(mhz))

    def summary(self) -> dict:
        return {tag: {"median_mhz": round(statistics.median(v), 1), "min_mhz": round(min(v), 1), "n": len(v)}
                for tag, v in self.samples.items()}


def busy_share(row: dict, block: list[dict]) -> float:
    """The least share of `row`'s time during which each other group (stream) of its block
    held an evaluation."""
    s, e = row["t_start"], row["t_end"]
    if e <= s:
        return 0.0
    others = {r["stream"] for r in block} - {row["stream"]}
    shares = [sum(max(0.0, min(e, r["t_end"]) - max(s, r["t_start"])) for r in block if r["stream"] == k) / (e - s)
              for k in others]
    return min(shares) if shares else 0.0


def compare(excl: list[dict], grouped: list[dict], between_sd: float) -> dict:
    """Whether a neighbour moved a problem's figure beyond what repeating it alone does.

    `moved`: the median of the grouped speedups lies outside the exclusive ones' range
    [min, max], widened on each side (log space) by the median half-width of the exclusive
    runs' own 95% intervals (each already widened by the spread between evaluations;
    z x between_sd where no interval was given). Why that rule, for 3 runs a side:
    - the plain range is no test: with nothing changed, the median of 3 fresh runs falls
      outside the range of 3 others 40% of the time (6 exchangeable draws: 8 of the 20
      orders);
    - widened by the runs' own interval half-width (1.96 sd where the intervals are right),
      it does so 0.4% of the time, and flags a shift of 3 sd 58% of the time, of 4 sd 88%
      (simulated, normal draws): at the 1-2% a run's interval says, shifts of about 5% are
      found, and a flag is a real move or an interval too narrow for its own repeats, which
      is a finding either way;
    - the runs' own intervals, not a fixed spread: a problem that repeats loosely alone is
      not flagged for repeating loosely beside others.
    `unmeasured`: fewer than 2 figures on a side (a failure, no speedup, or a grouped run
    whose neighbours were not busy for BUSY_MIN of it)."""
    e = [r for r in excl if r["correct"] and r["speedup"]]
    g = [r for r in grouped if r["correct"] and r["speedup"] and r.get("busy_share", 1.0) >= BUSY_MIN]
    out: dict[str, Any] = {"exclusive": [round(r["speedup"], 4) for r in e],
                           "grouped": [round(r["speedup"], 4) for r in g],
                           "grouped_gpus": [r["gpus"] for r in g], "exclusive_gpus": [r["gpus"] for r in e]}
    if len(e) < 2 or len(g) < 2:
        return {**out, "verdict": "unmeasured", "shift": None, "band": [None, None]}
    es = [r["speedup"] for r in e]
    halves = [max(math.log(r["speedup"] / r["ci"][0]), math.log(r["ci"][1] / r["speedup"]))
              for r in e if r["ci"][0] and r["ci"][1] and 0 < r["ci"][0] <= r["speedup"] <= r["ci"][1]]
    h = statistics.median(halves) if halves else 1.96 * between_sd
    lo, hi = min(es) * math.exp(-h), max(es) * math.exp(h)
    gm = statistics.median(r["speedup"] for r in g)
    return {**out, "verdict": "within" if lo <= gm <= hi else "moved",
            "shift": round(gm / statistics.median(es), 4), "band": [round(lo, 4), round(hi, 4)],
            "halfwidth_log": round(h, 4)}


def phases(rows: list[dict], candidate: str = "") -> list[dict]:
    """Per phase (the results' evidence seconds, wall and verdict around them), the median of
    the exclusive and of the grouped evaluations and the difference: where a grouped
    evaluation spends its extra time. Correct evaluations whose problem's timing mode was
    kept already (a first evaluation also decides it); of one `candidate` kind if given (an
    expert's first trial holds its first symmetric allocation and NVRTC compile, a
    reference's none)."""
    def usable(r: dict, tag: str) -> bool:
        return (r["tag"] == tag and r["correct"] and r["mode_source"] in ("cached", "")
                and (not candidate or r["candidate"] == candidate)
                and r.get("busy_share", 1.0) >= (BUSY_MIN if tag == "grouped" else 0))

    ex, gr = [r for r in rows if usable(r, "exclusive")], [r for r in rows if usable(r, "grouped")]

    def values(rs: list[dict], key: str) -> list[float]:
        if key in ("wall_s", "conclude_s", "samples"):
            return [float(r[key]) for r in rs]
        return [float(r["seconds"][key]) for r in rs if key in r["seconds"]]

    keys = ["wall_s", "conclude_s", "samples"] + sorted({k for r in ex + gr for k in r["seconds"]})
    out = []
    for k in keys:
        a, b = median(values(ex, k)), median(values(gr, k))
        if a is None or b is None:
            continue
        out.append({"phase": k, "exclusive": round(a, 4), "grouped": round(b, 4), "delta": round(b - a, 4),
                    "n": [len(values(ex, k)), len(values(gr, k))]})
    stops = {tag: dict(collections.Counter(r["stopped"] for r in rs)) for tag, rs in (("exclusive", ex), ("grouped", gr))}
    out.append({"phase": "stopped", "exclusive": stops["exclusive"], "grouped": stops["grouped"], "delta": None})
    return out


def machine(device: str, gpus: list[int]) -> dict:
    """The cores: what each GPU's judge and workers are pinned to, where spare sandboxes set
    up, and whether a hyperthread sibling of a pinned core is among those."""
    from pkb_ray.engine.node import cpu_pins

    allowed = sorted(os.sched_getaffinity(0))
    pins = {g: cpu_pins.plan([g], len(gpus)) for g in gpus}
    pinned = sorted(c for rcs in pins.values() for rc in rcs for c in (rc.judge, rc.workers))
    setup = cpu_pins.unpinned(gpus)
    siblings = sorted({s for c in pinned for s in cpu_pins.smt_siblings(c)} - set(pinned))
    info = {"cpus_allowed": len(allowed), "cpu_count": os.cpu_count(),
            "pins": {str(g): [rc.judge, rc.workers] for g, rcs in pins.items() for rc in rcs},
            "setup_cores": len(setup), "siblings_of_pinned": siblings,
            "siblings_in_setup": sorted(set(siblings) & set(setup)),
            "siblings_in_plain_unpinned": sorted(set(siblings) & set(cpu_pins.unpinned(gpus, siblings=lambda c: frozenset({c}))))}
    if device == "cuda":
        info["gpu"] = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                                     capture_output=True, text=True).stdout.split("\n")[0] + f" x{len(gpus)}"
    return info


def write(out: Path, stem: str, figures: dict) -> None:
    (out / f"{stem}.json").write_text(json.dumps(figures, indent=1) + "\n")
    md = [f"# GPU groups, world size {figures['world_size']}", "", f"Command: `{figures['command']}`", "",
          f"Machine: {figures['machine'].get('gpu', figures['device'])}, {figures['machine']['cpu_count']} CPUs; "
          f"groups: {figures['partition']}; {figures['date']}; {figures['elapsed_s']} s of {figures['budget_s']}", ""]
    md += [f"- note: {n}" for n in figures["notes"]] + ([""] if figures["notes"] else [])
    if figures.get("per_problem"):
        md += [f"## Exclusive against grouped, {figures['repeats_done']} of each per problem", "",
               "| problem | exclusive | grouped | shift | band | verdict |", "|---|---|---|---|---|---|"]
        for p in figures["per_problem"]:
            md.append(f"| {p['problem']} ({p['candidate']}) | {' '.join(map(str, p['exclusive']))} | "
                      f"{' '.join(map(str, p['grouped']))} | {p['shift']} | {p['band']} | {p['verdict']} |")
        md += ["", f"- within the exclusive spread: {figures['share_within']}; "
                   f"|shift| <= 2%: {figures['share_shift_within_2pct']}",
               "- rule: grouped median outside the exclusive [min, max] widened by the exclusive runs' own "
               "interval half-width = moved (scripts/bench_groups_gpu.py compare())",
               f"- moved: {', '.join(figures['moved']) or 'none'}. Every result records its co_tenancy; `pkb report` "
               "names the shared node in its header, `--max-co-tenancy 0` keeps only figures timed alone and "
               "`--split-co-tenancy` gives one leaderboard per co-tenancy (README, GPU groups)", ""]
    if figures.get("phases"):
        md += ["## Where a grouped evaluation's time goes (medians, seconds)", "",
               "| phase | exclusive | grouped | delta | n |", "|---|---|---|---|---|"]
        for ph in sorted(figures["phases"], key=lambda p: -p["delta"] if isinstance(p["delta"], float) else math.inf):
            md.append(f"| {ph['phase']} | {ph['exclusive']} | {ph['grouped']} | {ph['delta']} | {ph.get('n', '')} |")
        md.append("")
        for cand, rows in figures.get("phases_by_candidate", {}).items():
            grew = sorted((p for p in rows if isinstance(p["delta"], float)), key=lambda p: -p["delta"])[:8]
            if grew:
                md += [f"{cand}s, the 8 phases that grew most: " + "; ".join(
                    f"{p['phase']} {p['exclusive']} -> {p['grouped']}" for p in grew), ""]
    for k in ("core_clock", "grouped_busy_share_min", "throughput_exclusive_per_hour", "throughput_grouped_per_hour", "throughput_ratio",
              "self_timing_within_3pct", "self_timing_ci_holds_1"):
        if k in figures:
            md.append(f"- {k}: {figures[k]}")
    md += ["", f"Cores: {json.dumps(figures['machine'])}"]
    (out / f"{stem}.md").write_text("\n".join(md) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3, help="exclusive and grouped evaluations per problem")
    ap.add_argument("--budget-s", type=float, default=500.0, help="end within this many seconds of the start")
    ap.add_argument("--self-timing", choices=("auto", "on", "off"), default="auto",
                    help="auto: only where it fits the budget after the rest")
    ap.add_argument("--cache-dir", default="/tmp/pkb_groups_bench")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / f"groups_gpu_{time.strftime('%Y-%m-%d')}"))
    ap.add_argument("--ids", default="", help="comma-separated problems (default: the ten of issue 27)")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--fake-gpus", type=int, default=4, help="--device cpu: GPU slots to lend (no GPU is used)")
    args = ap.parse_args()

    from pkb_ray.engine.node import evaluation, gpu_groups, timing_stats
    from pkb_ray.problems import load_problems

    t_start = time.monotonic()
    ids = [i for i in args.ids.split(",") if i] or list(COLLECTIVE_EXPERTS + OTHER_REFERENCES)
    loaded = load_problems("builtin", ids)
    problems = {p: loaded.problems[p] for p in ids if p in loaded.problems
                and not loaded.problems[p].spec.world_size_refusal(args.world_size, tests=True)}
    gpus = node_gpus(args.device, args.fake_gpus)
    topo = gpu_groups.measure(gpus) if args.device == "cuda" else gpu_groups.uniform(gpus)
    groups = gpu_groups.GpuGroups(gpus, topo)
    partition = [groups.acquire(args.world_size) for _ in range(groups.slots(args.world_size))]
    for lease in partition:
        groups.release(lease)
    if len(partition) < 2:
        print(f"bench_groups_gpu: {len(gpus)} GPUs make {len(partition)} group of {args.world_size}: nothing to "
              "compare", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.device == "cuda":
        (out / "topo.txt").write_text(subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True).stdout)
    bench = Bench(args, groups, problems, [lease.gpus for lease in partition])
    bench.t0 = t_start
    between = timing_stats.between_sd(args.device, args.world_size)
    figures: dict[str, Any] = {
        "command": "python scripts/bench_groups_gpu.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
        "device": args.device, "machine": machine(args.device, gpus), "world_size": args.world_size,
        "groups": len(partition), "partition": [",".join(map(str, g)) for g in bench.partition],
        "topology_source": topo.source, "links": sorted({lease.link for lease in partition}),
        "repeats_asked": args.repeats, "repeats_done": 0, "budget_s": args.budget_s, "notes": bench.notes,
        "between_sd": between}
    stem = f"groups_ws{args.world_size}"

    def save() -> None:
        rows = bench.rows
        per = []
        for pid in problems:
            c = compare([r for r in rows if r["tag"] == "exclusive" and r["problem"] == pid],
                        [r for r in rows if r["tag"] == "grouped" and r["problem"] == pid], between)
            per.append({"problem": pid, "candidate": bench.which(pid), **c})
        measured = [p for p in per if p["verdict"] != "unmeasured"]
        figures.update(
            per_problem=per, phases=phases(rows),
            phases_by_candidate={c: phases(rows, c) for c in ("expert", "reference")},
            share_within=f"{sum(p['verdict'] == 'within' for p in measured)}/{len(measured)}",
            share_shift_within_2pct=f"{sum(abs(math.log(p['shift'])) <= 0.02 for p in measured)}/{len(measured)}",
            moved=[p["problem"] for p in per if p["verdict"] == "moved"],
            core_clock=clock.summary(),
            grouped_busy_share_min=min((r["busy_share"] for r in rows if r["tag"] in ("grouped", "self")), default=None),
            rows=rows,
            elapsed_s=round(bench.elapsed(), 1), date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
        write(out, stem, figures)

    print(f"{len(gpus)} GPUs, groups {bench.partition}; problems: {list(problems)}", flush=True)
    pinned = sorted({c for cores in figures["machine"]["pins"].values() for c in cores})
    clock = CoreClock(pinned or sorted(os.sched_getaffinity(0)))
    bench.prestart()
    figures["setup_s"] = round(bench.elapsed(), 1)
    excl_walls: list[tuple[int, float]] = []
    for r in range(args.repeats):
        if r and not bench.fits("round", "throughput"):
            bench.notes.append(f"{r} rounds of {args.repeats}: another would not fit --budget-s with the throughput")
            break
        clock.tag = "exclusive"
        excl_walls.append((r, bench.exclusive_round(r)))
        order = list(problems)[r % len(problems):] + list(problems)[:r % len(problems)]
        clock.tag = "grouped"
        bench.grouped_block([(p, bench.which(p)) for p in order], "grouped", r)
        clock.tag = ""
        figures["repeats_done"] = r + 1
        save()
    # One at a time: the exclusive rounds after the first (whose evaluations also decided
    # each problem's timing mode), or the first alone.
    later = [w for r, w in excl_walls if r] or [w for _, w in excl_walls]
    if later:
        figures["throughput_exclusive_per_hour"] = round(len(problems) * len(later) / sum(later) * 3600, 1)
    if bench.fits("throughput"):
        clock.tag = "throughput"
        tp = bench.throughput_grouped()
        clock.tag = ""
        figures["throughput"] = tp
        figures["throughput_grouped_per_hour"] = tp["evaluations_per_hour"]
        if later:
            figures["throughput_ratio"] = round(tp["evaluations_per_hour"] / figures["throughput_exclusive_per_hour"], 2)
    else:
        bench.notes.append("throughput (all groups at once) left out: it would not fit --budget-s")
    save()
    if args.self_timing == "on" or (args.self_timing == "auto" and bench.fits("self")):
        clock.tag = "self"
        bench.grouped_block([(p, "reference") for p in problems], "self", None)
        clock.tag = ""
        selfs = [r for r in bench.rows if r["tag"] == "self"]
        for r in selfs:
            lo, hi = r["ci"]
            r["within_3pct"] = bool(r["speedup"]) and abs(r["speedup"] - 1) <= 0.03
            r["ci_holds_1"] = bool(lo and hi and lo <= 1 <= hi)
        figures["self_timing_within_3pct"] = f"{sum(r['within_3pct'] for r in selfs)}/{len(selfs)}"
        figures["self_timing_ci_holds_1"] = f"{sum(r['ci_holds_1'] for r in selfs)}/{len(selfs)}"
    elif args.self_timing == "auto":
        bench.notes.append("self-timing under co-tenancy left out: it would not fit --budget-s (--self-timing on)")
    save()
    print((out / f"{stem}.md").read_text(), flush=True)
    evaluation.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
