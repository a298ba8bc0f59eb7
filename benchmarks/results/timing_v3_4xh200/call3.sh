set -o pipefail
source scripts/device/setup_gpu_machine.sh   # then: the slim site, see scripts/device/README.md
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=/tmp/res3; mkdir -p $R; cp .calls/commit.txt $R/ 2>/dev/null
t0=$(date +%s)
timeout 400 python3 scripts/self_timing.py --device cuda --world-size 4 --evals 1 --trials 2 --budget-s 370 --ids $(cat .calls/ws4_rest.txt) --cache-dir /tmp/st4 --out $R --tag _ws4_rest > $R/st4r.log 2>&1
echo "self-timing ws4: $(( $(date +%s) - t0 )) s"; tail -1 $R/st4r.log
grep -hE "#0: " $R/st4r.log | awk '{print $1, $3, $4, $5}' | cut -c1-100
python3 scripts/between_evaluations.py $R/self_timing_cuda_ws4_rest.json --out $R --tag _ws4_rest 2>&1 | tail -16
CUDA_VISIBLE_DEVICES=0,1 timeout 140 python3 -m pytest -q -m gpu tests/engine/test_gpu.py -k "launch_gate or node_survives" -p no:cacheprovider -x 2>&1 | grep -E "passed|failed|Error|assert" | cut -c1-300 | tail -15
tar czf $OUT/call3.tgz -C $R .
