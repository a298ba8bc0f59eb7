# Session 16, call 1 (4 x H200): the GPU suite three times, spread over the two GPU pairs
# (issue 37); then, in the time left: moe_ep_forward_narrow against itself at ws 4 (37, 42),
# bench_eval x5 at ws 2 (37), spherical_disco_conv re-audited at ws 2 (42), and the upstream
# 87 at ws 2 (42): the audit on GPUs 0,1 beside the self-timing on GPUs 2,3.
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }; left(){ echo $(( 580 - ($(date +%s) - t0) )); }
R=/tmp/res1; mkdir -p $R; cp .calls/commit.txt $R/; nvidia-smi -L > $R/gpus.txt
OUT=$R RUNS=3 RUN_TIMEOUT_S=${RUN_TIMEOUT_S:-180} bash scripts/device/pytest_gpu.sh
T "pytest_gpu rc=$?"; tail -4 $R/pytest_gpu.md; grep -h -E "^FAILED|^ERROR" $R/pytest_gpu_run*.log | cut -c1-200 | head
[ $(left) -gt 70 ] && { timeout 70 python3 scripts/self_timing.py --device cuda --world-size 4 --evals 1 --trials 2 --ids moe_ep_forward_narrow --cache-dir /tmp/st --out $R --tag _ws4_narrow > $R/st_narrow.log 2>&1; T "narrow rc=$?"; tail -2 $R/st_narrow.log | cut -c1-300; }
[ $(left) -gt 100 ] && { CUDA_VISIBLE_DEVICES=0,1 timeout 90 python3 scripts/bench_eval.py --device cuda --world-size 2 --repeats 5 --out $R --tag _ws2_s16 > $R/bench_eval.log 2>&1; T "bench_eval rc=$?"; grep -E "^\| [0-9]" $R/bench_eval_cuda_ws2_s16.md; }
[ $(left) -gt 60 ] && { CUDA_VISIBLE_DEVICES=0,1 timeout 50 python3 -m pkb_ray.cli problems check --device cuda --world-size 2 --ids spherical_disco_conv --out $R --tag _ws2_disco --problem-timeout 45 > $R/audit_disco.log 2>&1; T "disco rc=$?"; tail -3 $R/audit_disco.log | cut -c1-250; }
L=$(left)
if [ $L -gt 90 ]; then
  CUDA_VISIBLE_DEVICES=0,1 timeout $L python3 -m pkb_ray.cli problems check --device cuda --world-size 2 --source pkb:$PWD/.devtools/pkb_upstream --out $R --tag _pkb --budget-s $(( L - 50 )) --problem-timeout 45 > $R/audit_pkb.log 2>&1 &
  CUDA_VISIBLE_DEVICES=2,3 timeout $L python3 scripts/self_timing.py --device cuda --world-size 2 --evals 1 --trials 2 --budget-s $(( L - 40 )) --source pkb:$PWD/.devtools/pkb_upstream --cache-dir /tmp/st --out $R --tag _ws2_pkb_a > $R/st_pkb.log 2>&1 &
  wait; T "upstream done"; tail -3 $R/audit_pkb.log | cut -c1-250; tail -2 $R/st_pkb.log | cut -c1-250
fi
tar czf $OUT/s16_call1.tgz -C $R .
