# Device call 1 (nvidia-h100-x4 / h200-x4), timing v3 at world size 2.
set -o pipefail
source scripts/device/setup_gpu_machine.sh   # then: the slim site, see scripts/device/README.md
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=/tmp/res; mkdir -p $R
cp .calls/commit.txt $R/commit.txt 2>/dev/null
nvidia-smi -L | tee $R/gpus.txt; nvidia-smi topo -m >> $R/gpus.txt
t0=$(date +%s)
timeout 90 python3 scripts/device/first_call_profile.py --world-size 2 --problem allreduce 2>&1 | grep '^{' | tee $R/first_call.txt
timeout 60 python3 scripts/device/first_call_profile.py --world-size 2 --problem allreduce --store tcp 2>&1 | grep '^{' | tee -a $R/first_call.txt
echo "profile: $(( $(date +%s) - t0 )) s"
CUDA_VISIBLE_DEVICES=0,1 timeout 300 python3 scripts/expert_repeats.py --world-size 2 --repeats 5 --out $R --tag _a > $R/experts.log 2>&1 &
CUDA_VISIBLE_DEVICES=2,3 timeout 300 python3 scripts/bench_eval.py --device cuda --world-size 2 --repeats 5 --out $R --tag _ws2 > $R/bench.log 2>&1 &
wait
echo "experts+bench: $(( $(date +%s) - t0 )) s"
grep -E "#[0-9]: " $R/experts.log | cut -c1-230
tail -5 $R/bench.log | cut -c1-300
CUDA_VISIBLE_DEVICES=0,1 timeout 330 python3 scripts/self_timing.py --device cuda --world-size 2 --evals 1 --trials 2 --budget-s 300 --ids $(cat .calls/ws2_a.txt) --cache-dir /tmp/st --out $R --tag _ws2_a > $R/st_a.log 2>&1 &
CUDA_VISIBLE_DEVICES=2,3 timeout 330 python3 scripts/self_timing.py --device cuda --world-size 2 --evals 1 --trials 2 --budget-s 300 --ids $(cat .calls/ws2_b.txt) --cache-dir /tmp/st --out $R --tag _ws2_b > $R/st_b.log 2>&1 &
wait
echo "self-timing: $(( $(date +%s) - t0 )) s"
tail -1 $R/st_a.log; tail -1 $R/st_b.log
grep -hE "#0: " $R/st_a.log $R/st_b.log | awk '{print $1, $3, $4, $5}' | cut -c1-120 | head -120
python3 scripts/between_evaluations.py $R/self_timing_cuda_ws2_a.json $R/self_timing_cuda_ws2_b.json --out $R --tag _ws2 2>&1 | tail -20
tar czf $OUT/call1.tgz -C $R .
