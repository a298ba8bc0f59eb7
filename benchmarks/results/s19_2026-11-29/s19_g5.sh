# Session 19, call 5 (1 x H200): spares ahead, 2 against 3 of each kind (paces.SPARES), on one
# machine, A-B-A: every fourth built-in reference (27) against itself at ws 1, three times.
# g4 (3 of each) took a longer timing phase than g3 (2 of each, another machine): median
# timing.main 1.74 s against 0.77, 93 within 0.97-1.03 against 96. Which one is it?
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }
R=$OUT/g5; mkdir -p $R; cp .calls/commit.txt $R/
IDS=$(cat .calls/ids_third.txt)
for run in s2a s3 s2b; do
  n=${run:1:1}; sed -i "s/^SPARES = [0-9]*/SPARES = $n/" pkb_ray/engine/node/paces.py; grep "^SPARES" pkb_ray/engine/node/paces.py
  timeout 125 python3 scripts/self_timing.py --device cuda --world-size 1 --evals 1 --trials 2 --ids $IDS --budget-s 115 --cache-dir /tmp/st1 --out $R --tag _ws1_$run > $R/self_timing_$run.log 2>&1
  T "self_timing $run rc=$?"; tail -1 $R/self_timing_$run.log | cut -c1-200
  python3 - $R/self_timing_cuda_ws1_$run.json <<'PY'
import json,sys,statistics as st,math
d=json.load(open(sys.argv[1])); ev=[e for r in d["rows"] for e in r.get("evals",[]) if e.get("speedup")]
print(f"  {len(ev)} timed; median timing.main {st.median(e['seconds']['timing.main'] for e in ev):.2f} s, node_s {st.median(e['node_seconds'] for e in ev):.2f}; paces differ {sum('worker_paces_differ' in e['flags'] for e in ev)}; rms log {math.sqrt(st.mean([math.log(e['speedup'])**2 for e in ev])):.4f}")
PY
done
cd $OUT && tar czf g5.tgz g5 && rm -rf g5
