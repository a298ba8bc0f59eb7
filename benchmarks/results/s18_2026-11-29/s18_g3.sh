# Session 18, call 3 (1 x H200): bench_eval at ws 1 beside a 10 ms log of the host (schedstat,
# steal, PSI) and a 20 ms log of the GPU (clocks, power, throttle reasons): what the bursts are.
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }
R=$OUT/g3; mkdir -p $R; cp .calls/commit.txt $R/
nvidia-smi -q -d PERFORMANCE,CLOCK,POWER > $R/nvidia_smi_q.txt 2>&1
python3 scripts/device/machine_log.py --out $R/log & LOG=$!
sleep 1
timeout 150 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 8 --shapes 1024x1024 8192x8192 --out $R --tag _ws1_log > $R/bench_eval.log 2>&1
T "bench_eval rc=$?"; grep -E "^\| [0-9]" $R/bench_eval_cuda_ws1_log.md
kill $LOG; sleep 1
wc -l $R/log/*.csv; head -3 $R/log/gpu.csv; head -3 $R/log/host.csv; nproc
cut -d, -f7 $R/log/gpu.csv | sort | uniq -c | head
gzip $R/log/*.csv
