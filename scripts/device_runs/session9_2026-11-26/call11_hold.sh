# Device call 11 (nvidia-h100-x1), ninth session: the node holds its spares' device set-up
# while a judge times (this tree; hold.patch is its `git diff -- pkb_ray` against the commit
# before it). The launch-bound references of calls 9-10 against themselves, alternating this
# tree and the tree before it (samples dumped); the engine's GPU tests at world size 1; then
# bench_eval of 9c78ee4 first and of this tree, on this machine.
set -o pipefail
# The site without Ray (.devsite_slim: the engine never imports it), so that the tree and
# 9c78ee4 fit what a run may carry.
mkdir -p .devsite && cp .devsite_slim/site-py312.tgz .devsite/
source scripts/device_runs/setup_gpu_machine.sh
source scripts/device_runs/session8_2026-11-26/setup_base.sh
python3 scripts/device_runs/session7_2026-11-26/dump_samples.py
IDS=allreduce,broadcast,gemm_allreduce,allgather,alltoall,reduce_scatter,gated_deltanet_ulysses,kimi_delta_attention_cp_tp
mkdir -p /tmp/nohold && cp -r pkb_ray problems scripts conf pyproject.toml sweep.py /tmp/nohold/
(cd /tmp/nohold && patch -R -p1 -s < scripts/device_runs/session9_2026-11-26/hold.patch && grep -c HOLD_FILE pkb_ray/engine/spawn.py)
run() {  # tree tag
  local t0=$(date +%s)
  (cd $1 && PYTHONPATH=/tmp/site:$1 PKB_SAMPLES_DUMP=$OUT/samples_$2.jsonl timeout 100 python3 scripts/self_timing.py --device cuda \
    --world-size 1 --evals 1 --trials 2 --ids $IDS --out /tmp/st_$2 --tag _$2 2>&1 | grep -E "^[a-z_]+ #0: " | cut -c1-50 | tr '\n' ' ')
  python3 -c "import json; d=json.load(open('/tmp/st_$2/self_timing_cuda_$2.json')); print('ns', round(sum(e.get('node_seconds') or 0 for r in d['rows'] for e in r.get('evals',[])),1))"
  echo "$2: $(( $(date +%s) - t0 )) s"
}
for i in 1 2; do
  run /tmp/nohold nohold_$i
  run $PWD hold_$i
done
timeout 150 python3 -m pytest -q -m gpu tests/engine/test_gpu_ws1.py -p no:cacheprovider 2>&1 | tail -2
t1=$(date +%s)
(cd /tmp/base && PYTHONPATH=/tmp/site:/tmp/base timeout 120 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT/base --tag _ws1_9c78ee4 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | cut -c1-220 | tail -3)
echo "base: $(( $(date +%s) - t1 )) s"; t0=$(date +%s)
timeout 130 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT --tag _ws1_hold 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | cut -c1-220 | tail -3
echo "hold: $(( $(date +%s) - t0 )) s"
