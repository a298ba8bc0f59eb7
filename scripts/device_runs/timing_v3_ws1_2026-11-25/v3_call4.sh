# Device call 4 (session 4): inputs synchronized before a trial, arenas of two calls at least.
set -o pipefail
source .baseline/setup.sh
R=$PWD
export PYTHONPATH=/tmp/site:$R
t0=$(date +%s)
timeout 200 python3 -m pytest tests/engine/test_gpu_ws1.py -m gpu -s -q -p no:cacheprovider 2>&1 | grep -v "^\[rank" | grep "reference at ws1\|passed\|failed\|Error" | cut -c1-400
echo "test: $(( $(date +%s) - t0 )) s"; t1=$(date +%s)
timeout 200 python3 scripts/self_timing.py --device cuda --world-size 1 --evals 1 --trials 2 --budget-s 150 --ids vocab_parallel_gemv_decode,tp_rmsnorm_sharded_hidden,fft2d_transpose --out $OUT --tag _ws1_memory 2>&1 | grep -v "^\[rank" | grep "#0:" | cut -c1-500
echo "self-timing: $(( $(date +%s) - t1 )) s"; t2=$(date +%s)
timeout 170 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT --tag _ws1_v3d 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | cut -c1-220 | tail -4
echo "bench: $(( $(date +%s) - t2 )) s"
