# The spinner attack against the honest exchange, alternately, in one process (CPU; the
# numbers in benchmarks/results/cpu_selfcheck_0.4.3_2026-11-26/NOTES.md). Run from the repo root.
import sys
sys.path.insert(0, ".")
from pathlib import Path
from tests.engine.conftest import request_for, LOADER
from pkb_ray.engine import evaluate
for name in ["tests/engine/fixtures/candidates/store_exchange.py", "tests/engine/adversarial/spins_beside_reference.py"] * 2:
    r = evaluate(request_for(Path(name), "/tmp/exp/cache2"), load_problem=LOADER)
    print(Path(name).stem, r.correct, r.failure, f"speedup={r.speedup} cand={r.candidate_ms} ref={r.reference_ms}", r.flags, r.message[:150])
