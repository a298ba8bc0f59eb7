# Device call 2 (4 GPUs): every expert once at ws 2 (0,1) beside the GPU tests not reached
# in call 1 (2,3); then every expert once at ws 4.
set -o pipefail
mkdir -p .devsite && cp .devsite_slim/site-py312.tgz .devsite/
source scripts/device/setup_gpu_machine.sh
R=/tmp/res2; mkdir -p $R; cp .calls/commit.txt $R/
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }
ids(){ python3 -c "
import sys, pathlib
from pkb_ray.problems.loader import load_problem
ps = sorted(p.parent.name for p in pathlib.Path('problems').glob('*/expert.py'))
print(','.join(p for p in ps if int(sys.argv[1]) in load_problem('builtin', p).spec.world_sizes))" $1; }
IDS2=$(ids 2); IDS4=$(ids 4); echo "ws2: $IDS2"; echo "ws4: $IDS4"
CUDA_VISIBLE_DEVICES=0,1 timeout 150 python3 scripts/bench_eval.py --device cuda --world-size 2 --repeats 5 --out $R --tag _ws2_ahead2 > $R/bench.log 2>&1
T bench; tail -3 $R/bench.log | cut -c1-250
python3 - $R <<'PY'
import json, sys, statistics as st
d = json.load(open(f"{sys.argv[1]}/bench_eval_cuda_ws2_ahead2.json"))
for s in d["shapes"]:
    runs = s["runs"][1:]
    print(s["shape"], "node-s", [round(r["node_seconds"], 2) for r in s["runs"]], {k: round(st.median([r["seconds"].get(k, 0) for r in runs]), 2) for k in ("start", "trial.first", "timing")}, [round(r["speedup"], 3) for r in s["runs"]])
PY
CUDA_VISIBLE_DEVICES=0,1 timeout 290 python3 scripts/expert_repeats.py --world-size 2 --repeats 1 --ids $IDS2 --cache-dir /tmp/ex --out $R --tag _v2 > $R/exp2.log 2>&1 &
CUDA_VISIBLE_DEVICES=2,3 timeout 290 python3 -m pytest -q -m gpu tests/engine/test_gpu_bounds.py tests/engine/test_gpu_ws1.py tests/engine/test_gpu_ws1_attacks.py tests/selfcheck/audit/test_audit_gpu.py tests/engine/test_gpu.py -k "not expert_is_correct" -p no:cacheprovider -rfE --durations=30 > $R/pytest2.log 2>&1 &
wait
T "ws2 + tests"
grep -E "#0: " $R/exp2.log | cut -c1-200
grep -E "passed|failed|FAILED|ERROR" $R/pytest2.log | cut -c1-300 | tail -20
left=$(( 580 - ($(date +%s) - t0) ))
timeout $left python3 scripts/expert_repeats.py --world-size 4 --repeats 1 --ids $IDS4 --cache-dir /tmp/ex --out $R --tag _v2 > $R/exp4.log 2>&1
T "ws4"
grep -E "#0: " $R/exp4.log | cut -c1-200
tar czf $OUT/call2.tgz -C $R .
