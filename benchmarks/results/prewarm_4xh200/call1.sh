# Device call 1 (4 GPUs): prewarm profile, bench_eval A/B (fcb1537 vs head), experts x5,
# isolation probe, pytest -m gpu once (durations).
set -o pipefail
mkdir -p .devsite && cp .devsite_slim/site-py312.tgz .devsite/
source scripts/device/setup_gpu_machine.sh
R=/tmp/res1; mkdir -p $R; cp .calls/commit.txt $R/
nvidia-smi -L > $R/gpus.txt; nvidia-smi topo -m >> $R/gpus.txt; nproc >> $R/gpus.txt
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }
CUDA_VISIBLE_DEVICES=0,1 timeout 60 python3 scripts/device/first_call_profile.py --world-size 2 --prewarm 2>&1 | grep '^{' | tee $R/first_call_prewarm.txt
T profile
(cd .base && CUDA_VISIBLE_DEVICES=0,1 PYTHONPATH=/tmp/site:$PWD timeout 170 python3 scripts/bench_eval.py --device cuda --world-size 2 --repeats 5 --out $R --tag _ws2_fcb1537 > $R/bench_base.log 2>&1)
T bench base; tail -4 $R/bench_base.log | cut -c1-250
CUDA_VISIBLE_DEVICES=0,1 timeout 170 python3 scripts/bench_eval.py --device cuda --world-size 2 --repeats 5 --out $R --tag _ws2_head > $R/bench_head.log 2>&1
T bench head; tail -4 $R/bench_head.log | cut -c1-250
python3 - $R <<'PY'
import json, sys, statistics as st
for tag in ("_ws2_fcb1537", "_ws2_head"):
    try: d = json.load(open(f"{sys.argv[1]}/bench_eval_cuda{tag}.json"))
    except Exception as e: print(tag, "missing", e); continue
    for s in d["shapes"]:
        runs = s["runs"][1:]
        ns = [r["node_seconds"] for r in runs]; sp = [r["speedup"] for r in runs if r.get("speedup")]
        tf = [r["seconds"].get("trial.first", 0) for r in runs]
        print(tag, s["shape"], "node-s med %.2f" % st.median(ns), "trial.first med %.2f" % st.median(tf),
              "speedup max/min %.3f" % (max(sp)/min(sp) if sp else 0))
PY
timeout 200 python3 scripts/expert_repeats.py --world-size 2 --repeats 5 --out $R --tag _head > $R/experts.log 2>&1 &
EXP=$!
sleep 1; wait $EXP
T experts; grep -E "#[0-9]: |max/min" $R/experts.log | cut -c1-200 | tail -30
timeout 120 python3 scripts/isolation_probe.py --world-size 2 --out $R/isolation_probe_ws2.json > $R/isolation.log 2>&1
T isolation; tail -25 $R/isolation.log | cut -c1-220
left=$(( 585 - ($(date +%s) - t0) ))
T "pytest gpu with ${left}s"
timeout $left python3 -m pytest -q -m gpu tests/engine/test_gpu.py tests/engine/test_gpu_bounds.py tests/engine/test_gpu_isolation.py tests/engine/test_gpu_ws1.py tests/engine/test_gpu_ws1_attacks.py tests/selfcheck/audit/test_audit_gpu.py -p no:cacheprovider --durations=40 > $R/pytest1.log 2>&1
T pytest rc=$?; grep -E "passed|failed|FAILED|ERROR|[0-9.]+s (call|setup)" $R/pytest1.log | cut -c1-200 | tail -60
tar czf $OUT/call1.tgz -C $R .
