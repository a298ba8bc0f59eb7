"""Evaluate CPU-suite candidates on the fixture problem as tests/engine/conftest.py does,
printing each speedup, calls per sample, the probe's per-call figures and the log lines of
spins_unseen. Run: python3 cpu_probe_batch.py REPO_ROOT NAME [NAME ...] (CPU, not a device run)."""
import sys, os
root = sys.argv[1]; sys.path.insert(0, root); os.chdir(root)
from tests.engine.conftest import request_for, LOADER, ADVERSARIAL, CANDIDATES
from pkb_ray.engine import evaluate
for name in sys.argv[2:]:
    path = (ADVERSARIAL if (ADVERSARIAL / f"{name}.py").exists() else CANDIDATES) / f"{name}.py"
    r = evaluate(request_for(path, "/tmp/spcache"), load_problem=LOADER)
    sec = r.evidence.get("seconds", {})
    print(name, r.correct, round(r.speedup or 0, 3), "k", r.timing.calls_per_sample, "ref_probe_ms", round(sec.get("timing.probe.reference_call", 0)*1e3, 3), "cand_probe_ms", round(sec.get("timing.probe.candidate_call", 0)*1e3, 3), "stopped_cpu", sec.get("timing.stopped_cpu.candidate"), flush=True)
    if name == "spins_unseen":
        print("log:", [l for l in r.log.splitlines() if "spinner" in l or "rror" in l][-5:])
