set -o pipefail
source scripts/device/setup_gpu_machine.sh   # then: the slim site, see scripts/device/README.md
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=/tmp/res2; mkdir -p $R; cp .calls/commit.txt $R/ 2>/dev/null
t0=$(date +%s)
timeout 540 python3 scripts/self_timing.py --device cuda --world-size 4 --evals 1 --trials 2 --budget-s 500 --ids $(cat .calls/ws4.txt) --cache-dir /tmp/st4 --out $R --tag _ws4 > $R/st4.log 2>&1
echo "self-timing ws4: $(( $(date +%s) - t0 )) s"; tail -1 $R/st4.log
grep -hE "#0: " $R/st4.log | awk '{print $1, $3, $4, $5}' | cut -c1-100
python3 scripts/between_evaluations.py $R/self_timing_cuda_ws4.json --out $R --tag _ws4 2>&1 | tail -16
tar czf $OUT/call2.tgz -C $R .
