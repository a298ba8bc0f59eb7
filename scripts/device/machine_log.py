"""Log what the machine does beside a benchmark, so that its samples can be lined up with it
(judge samples carry `sample_at_s`, wall clock): every --every-ms, the host's CPU time split
(/proc/schedstat: CPUs' worth of tasks running and waiting, in ns; /proc/stat: busy,
steal, in 10 ms ticks) and the CPU pressure (/proc/pressure/cpu), and, where
nvidia-smi exists, each GPU's SM and memory clocks, power, temperature and the active
clock-event (throttle) reasons, from `nvidia-smi -lms`.

    python3 scripts/device/machine_log.py --out DIR &   # then run the benchmark, then kill it

Writes DIR/host.csv and DIR/gpu.csv. A sampler of its own rather than sar/dcgm: neither is on
the lent machines, and 10 ms rows are what a 40 ms timing sample needs.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

GPU_FIELDS = "timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active,utilization.gpu"


def cpu_times() -> list[int]:
    with open("/proc/stat") as f:
        return [int(x) for x in f.readline().split()[1:]]


def schedstat_ns() -> tuple[int, int] | None:
    """(ns all CPUs spent running tasks, ns tasks spent runnable but waiting for a CPU): /proc/
    schedstat counts in ns, where /proc/stat's ticks are 10 ms, a whole row here. None where
    the kernel has no schedstat."""
    run = wait = 0
    try:
        with open("/proc/schedstat") as f:
            for line in f:
                if line.startswith("cpu"):
                    parts = line.split()
                    run += int(parts[7])
                    wait += int(parts[8])
    except (OSError, IndexError, ValueError):
        return None
    return run, wait


def pressure_total_us() -> int | None:
    try:
        with open("/proc/pressure/cpu") as f:
            some = f.readline().split()
        return int(some[-1].split("=")[1])
    except (OSError, IndexError, ValueError):
        return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--every-ms", type=float, default=10.0)
    ap.add_argument("--gpu-every-ms", type=int, default=20)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    gpu = None
    if shutil.which("nvidia-smi"):
        gpu = subprocess.Popen(["nvidia-smi", f"--query-gpu={GPU_FIELDS}", "--format=csv,noheader,nounits",
                                f"-lms={args.gpu_every_ms}"], stdout=open(out / "gpu.csv", "w"),
                               stderr=subprocess.DEVNULL)
    stop = False

    def on_signal(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with open(out / "host.csv", "w") as f:
        f.write("t,running_cpus,waiting_tasks,busy_share,steal_share,pressure_share\n")
        prev, prev_p, prev_t, prev_s = cpu_times(), pressure_total_us(), time.time(), schedstat_ns()
        while not stop:
            time.sleep(args.every_ms / 1e3)
            cur, cur_p, now, cur_s = cpu_times(), pressure_total_us(), time.time(), schedstat_ns()
            d = [c - p for c, p in zip(cur, prev)]
            total = sum(d) or 1
            idle = d[3] + (d[4] if len(d) > 4 else 0)
            steal = d[7] if len(d) > 7 else 0
            dt_ns = (now - prev_t) * 1e9
            running = waiting = ""
            if cur_s is not None and prev_s is not None:
                running, waiting = f"{(cur_s[0] - prev_s[0]) / dt_ns:.3f}", f"{(cur_s[1] - prev_s[1]) / dt_ns:.3f}"
            press = ((cur_p - prev_p) / 1e6 / (now - prev_t)) if cur_p is not None and prev_p is not None else ""
            f.write(f"{now:.4f},{running},{waiting},{(total - idle) / total:.4f},{steal / total:.4f},{press if press == '' else f'{press:.4f}'}\n")
            prev, prev_p, prev_t, prev_s = cur, cur_p, now, cur_s
    if gpu is not None:
        gpu.terminate()
    return 0


if __name__ == "__main__":
    sys.exit(main())
