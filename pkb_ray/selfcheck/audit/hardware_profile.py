"""The node's hardware profile (engine/hardware.py: link, HBM and matmul rates) for the
audit's roofline: cached per hardware fingerprint, else measured once in a fresh process
that sees every GPU (the audit's parent never initialises CUDA; its ranks hold the GPUs
only while they run).

    python -m pkb_ray.selfcheck.audit.hardware_profile FINGERPRINT   (prints the profile as JSON)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict

MEASURE_TIMEOUT_S = 300.0
"""measure_profile takes about 1 s per ordered GPU pair plus ~3 s (12 pairs on 4 GPUs)."""


def node_profile(cache_dir: str):
    """(HardwareProfile or None, where it came from or why there is none)."""
    from pkb_ray.engine import hardware
    from pkb_ray.selfcheck.ranks import MULTICAST_OFF

    cache_dir = os.path.expanduser(cache_dir)
    fp = hardware.fingerprint("cuda")
    cached = hardware.load_profile(cache_dir, fp)
    if cached is not None:
        return cached, f"cached {hardware.profile_path(cache_dir, fp)}"
    env = {**os.environ, **MULTICAST_OFF, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    try:
        done = subprocess.run([sys.executable, "-m", __name__, fp], env=env, capture_output=True, text=True,
                              timeout=MEASURE_TIMEOUT_S)
        prof = hardware.profile_from_dict(json.loads(done.stdout.strip().splitlines()[-1]))
    except (OSError, subprocess.SubprocessError, ValueError, IndexError, TypeError) as exc:
        return None, f"hardware profile not measured: {type(exc).__name__}: {str(exc)[:200]}"
    hardware.save_profile(cache_dir, prof)
    return prof, f"measured now, cached in {hardware.profile_path(cache_dir, fp)}"


def describe(profile) -> str:
    if profile is None:
        return "no hardware profile"
    links = sorted(set(profile.links.values())) or ["?"]
    return (f"{profile.gpu_name} x{profile.gpu_count} ({'/'.join(links)}), torch {profile.torch_version}, "
            f"CUDA {profile.cuda_version}; min peer {min(profile.peer_bw_gbps.values(), default=0):.0f} GB/s, "
            f"HBM {profile.hbm_bw_gbps:.0f} GB/s, bf16 {profile.bf16_tflops:.0f} TFLOP/s, "
            f"fp32 {profile.fp32_tflops:.0f} TFLOP/s; fingerprint {profile.fingerprint}")


def main() -> int:
    from pkb_ray.engine import hardware

    print(json.dumps(asdict(hardware.measure_profile(sys.argv[1]))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
