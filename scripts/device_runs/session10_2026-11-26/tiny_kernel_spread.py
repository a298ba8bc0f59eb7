"""Is a 12 us kernel's time the same in every process? Outside the harness: plain CUDA events
around 64 back-to-back calls (each on its own 2 MiB bf16 buffers, as the arena lays them out),
in several fresh processes, each with three rounds of fresh allocations. Prints per round the
median us per call and the SM clock nvidia-smi saw, then the spreads (max/min) within a
process (rounds) and between processes. Run: python3 tiny_kernel_spread.py [processes]"""
import json
import statistics
import subprocess
import sys


def smi() -> str:
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw",
                               "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception as e:  # the figure is context, not the measurement
        return f"? {e}"


def child() -> None:
    import torch
    n = 1024 * 1024  # 1024x1024 bf16: 2 MiB
    out = {"rounds": []}
    for rnd in range(3):
        xs = [torch.randn(n, device="cuda", dtype=torch.bfloat16) for _ in range(64)]
        ys = [torch.empty_like(x) for x in xs]
        zs = [torch.empty_like(x) for x in xs]
        for _ in range(20):  # warm
            for x, y in zip(xs, ys):
                y.copy_(x)
        torch.cuda.synchronize()
        res = {}
        for name, op in (("copy", lambda x, y, z: y.copy_(x)), ("add", lambda x, y, z: torch.add(x, y, out=z))):
            per = []
            for _ in range(100):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                for x, y, z in zip(xs, ys, zs):
                    op(x, y, z)
                b.record()
                b.synchronize()
                per.append(a.elapsed_time(b) * 1e3 / 64)
            res[name] = statistics.median(per)
        res["smi"] = smi()
        out["rounds"].append(res)
        del xs, ys, zs
        torch.cuda.empty_cache()
    print(json.dumps(out))


def main() -> None:
    procs = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    rows = []
    for p in range(procs):
        r = subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True, timeout=120)
        d = json.loads(r.stdout.strip().splitlines()[-1])
        rows.append(d["rounds"])
        print(f"process {p}: " + "; ".join(f"copy {x['copy']:.2f} us, add {x['add']:.2f} us (smi {x['smi']})"
                                             for x in d["rounds"]), flush=True)
    for name in ("copy", "add"):
        within = [max(x[name] for x in rs) / min(x[name] for x in rs) for rs in rows]
        meds = [statistics.median(x[name] for x in rs) for rs in rows]
        print(f"{name}: between processes max/min {max(meds) / min(meds):.3f} (medians {[round(m, 2) for m in meds]}); "
              f"within a process, rounds max/min median {statistics.median(within):.3f}, max {max(within):.3f}")


if __name__ == "__main__":
    child() if "--child" in sys.argv else main()
