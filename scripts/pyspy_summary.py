"""Where a py-spy profile of the engine spent its time, by process and function.

    py-spy record --subprocesses --idle --nonblocking --rate 250 --format raw -o prof.txt -- \
        python3 scripts/bench_eval.py ...
    python scripts/pyspy_summary.py prof.txt.gz                       # processes, by samples
    python scripts/pyspy_summary.py prof.txt.gz --pid 1974            # that process's functions
    python scripts/pyspy_summary.py prof.txt.gz --pid 1974 --under Session.calibrate

Seconds are samples / rate (--idle: waiting counts too). A function's seconds include what
it called (each stack counted once per function however deep it recurses).
"""

from __future__ import annotations

import argparse
import collections
import gzip
import re


def read(path: str) -> dict[str, collections.Counter]:
    """pid -> Counter of stacks (tuples of 'function (file)')."""
    opener = gzip.open if path.endswith(".gz") else open
    by_pid: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    with opener(path, "rt") as f:
        for line in f:
            body, count = line.rstrip("\n").rsplit(" ", 1)
            parts = body.split(";")
            procs = [p for p in parts if p.startswith("process ")]
            pid = procs[-1].split(":")[0].removeprefix("process ") if procs else "?"
            frames = tuple(re.sub(r":\d+\)", ")", p) for p in parts if not p.startswith("process "))
            by_pid[pid][frames] += int(count)
    return by_pid


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("profile")
    ap.add_argument("--pid")
    ap.add_argument("--under", help="a function: what it called, two levels down")
    ap.add_argument("--rate", type=float, default=250.0)
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()
    by_pid = read(args.profile)
    if not args.pid:
        for pid, stacks in sorted(by_pid.items(), key=lambda kv: -sum(kv[1].values()))[:args.top]:
            mains = collections.Counter(st[0] for st in stacks.elements() if st)
            print(f"{sum(stacks.values()) / args.rate:8.2f} s  pid {pid}  {mains.most_common(1)[0][0] if mains else ''}")
        return 0
    stacks = by_pid[args.pid]
    totals: collections.Counter = collections.Counter()
    for st, n in stacks.items():
        if args.under:
            at = next((i for i, f in enumerate(st) if f.startswith(args.under)), None)
            if at is not None:
                totals[" > ".join(st[at + 1:at + 3]) or "(itself)"] += n
        else:
            for f in set(st):
                totals[f] += n
    for name, n in totals.most_common(args.top):
        print(f"{n / args.rate:8.2f} s  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
