# Device call 3 (2 GPUs): the GPU bound attacks at ws 2 with their failures printed, the
# ws-1 attack that failed in call 2, then the ws-2 half of the self-timing misses probe
# (selftiming-misses branch, from .calls/misses): before and after at once.
set -o pipefail
mkdir -p .devsite && cp .devsite_slim/site-py312.tgz .devsite/
source scripts/device/setup_gpu_machine.sh
R=/tmp/res3; mkdir -p $R; cp .calls/commit.txt $R/
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }
timeout 170 python3 -m pytest -v -s -m gpu tests/engine/test_gpu_bounds.py -p no:cacheprovider --tb=short -rfE > $R/pytest_bounds.log 2>&1
CUDA_VISIBLE_DEVICES=0 timeout 60 python3 -m pytest -v -m gpu "tests/engine/test_gpu_ws1_attacks.py::test_cpu_attacks_on_cuda_tensors_at_world_size_1" -p no:cacheprovider --tb=short -rfE > $R/pytest_ws1.log 2>&1
T tests
grep -E "PASSED|FAILED|SKIPPED|^E |passed|failed|^\[" $R/pytest_bounds.log | cut -c1-400 | tail -40
grep -E "PASSED|FAILED|^E |passed|failed" $R/pytest_ws1.log | cut -c1-400 | tail -20
M=$R/misses; mkdir -p $M
WS2=gated_deltanet_ulysses,moe_dispatch,sync_batchnorm,ep_clip_grad_norm,moe_load_balancing_loss
cd .calls/misses
for v in never unheld; do
  left=$(( 490 - ($(date +%s) - t0) ))
  [ "$v" = never ] && left=$(( left / 2 ))
  b=$(( left - 40 ))
  PYTHONPATH=/tmp/site:$PWD timeout $left python3 scripts/self_timing.py --device cuda --evals 2 --trials 2 --world-size 2 --ids $WS2 --budget-s $b --stop-other-worker $v --keep-samples --cache-dir /tmp/st_$v --out $M --tag _ws2_$v > $M/ws2_$v.log 2>&1
done
T misses
grep -hE " #[0-9]+: " $M/ws2_*.log | cut -c1-160
PYTHONPATH=/tmp/site:$PWD python3 scripts/device/misses_table.py $M/self_timing_*_ws*.json 2>&1 | tee $M/table.md | tail -40
cd ../..
tar czf $OUT/call3.tgz -C $R .
