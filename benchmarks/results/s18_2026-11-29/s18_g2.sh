# Session 18, call 2 (1 x H200): where a 1024x1024 sample's 30-40 ms go (4 runs of 64 calls,
# ~3 ms of them GPU windows): py-spy over bench_eval and every process under it.
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
pip install -q .devtools/py_spy-*.whl > /dev/null 2>&1 || echo "py-spy install failed"
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }
R=$OUT/g2; mkdir -p $R; cp .calls/commit.txt $R/
timeout 150 py-spy record --subprocesses --idle --nonblocking -r 400 --format raw -o $R/prof_idle.txt -- python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 4 --shapes 1024x1024 --out $R --tag _ws1_prof > $R/bench_eval.log 2>&1
T "profiled bench_eval rc=$?"; grep -E "^\| [0-9]" $R/bench_eval_cuda_ws1_prof.md; tail -3 $R/bench_eval.log | cut -c1-300
wc -c $R/prof_idle.txt
gzip -f $R/prof_idle.txt
