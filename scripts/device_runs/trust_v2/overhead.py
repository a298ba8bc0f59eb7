"""What the trust-v2 defences cost, each measured alone (CPU; prints ms).

    PYTHONPATH=$PWD python3 scripts/device_runs/trust_v2/overhead.py

- the frame depth scan on a typical Done reply and on the largest allowed (2 MB) one;
- sealing a memfd (once per arena and gate page);
- installing the no-network filter (once per rank, in a child process);
- removing a sandbox directory (a typical one, and a 3000-level tree);
- the package's code copy (once per process now).
"""

import json
import os
import subprocess
import sys
import tempfile
import time

from pkb_ray.engine import launch
from pkb_ray.engine.wire import frames
from pkb_ray.engine.wire.arena import sealed_memfd


def ms(fn, n=1):
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) * 1e3 / n


leaf = {"T": {"slot": 0, "shape": [4096], "dtype": "float32", "device": "cpu", "plain": True, "copied": True}}
done = json.dumps({"op": "done", "outputs": [leaf] * 64, "event_ms": 1.0, "host_ms": 1.0, "expired": 0}).encode()
big = json.dumps({"op": "failed", "stage": "call", "exc_type": "E", "message": "m", "log": "x" * (2 << 20) + "[{"}).encode()
print(f"depth scan, Done of 64 calls ({len(done)} B): {ms(lambda: frames.json_depth(done), 200):.3f} ms")
print(f"parse with the scan, same: {ms(lambda: frames.parse(done), 200):.3f} ms; "
      f"as before (json.loads + _unfinite): {ms(lambda: frames._unfinite(json.loads(done)), 200):.3f} ms")
print(f"depth scan, 2 MB log: {ms(lambda: frames.json_depth(big), 5):.1f} ms")
print(f"sealed memfd of 1 GiB: {ms(lambda: os.close(sealed_memfd('x', 1 << 30)), 20):.3f} ms")
code = "import time,sys; sys.path.insert(0, sys.argv[1]); t=time.perf_counter(); " \
       "from pkb_ray.engine.worker import no_network; no_network.install(); print((time.perf_counter()-t)*1e3)"
runs = [float(subprocess.run([sys.executable, "-c", code, os.getcwd()], capture_output=True, text=True).stdout)
        for _ in range(5)]
print(f"no-network filter install (import + load): median {sorted(runs)[2]:.2f} ms")


def typical():
    d = tempfile.mkdtemp()
    for i in range(50):
        os.makedirs(f"{d}/ext/m{i}", exist_ok=True)
        with open(f"{d}/ext/m{i}/f.o", "wb") as f:
            f.write(b"x" * 100_000)
    return d


d = typical()
print(f"remove a 50-dir 5 MB sandbox: {ms(lambda: launch.remove_tree(d)):.1f} ms")
d = tempfile.mkdtemp()
os.chdir(d)
for _ in range(3000):
    os.mkdir("d")
    os.chdir("d")
os.chdir("/")
print(f"remove a 3000-level tree: {ms(lambda: launch.remove_tree(d)):.1f} ms (exists after: {os.path.exists(d)})")
launch.package_copy.cache_clear()
print(f"package code copy (once per process): {ms(launch.package_copy):.1f} ms")
