# Session 14, call 1 (2 x H200): issue 44's tool episode (NVLink bytes in profile), issue 43's
# `python3 sweep.py eval.world_size=2` over every expert in one sweep (0.5.2's first GPU run),
# issue 37's bench_eval x5 at ws 2, issue 42's re-audit of the later fixes at ws 2.
set -o pipefail
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }
nvidia-smi -L; nproc
R=/tmp/res1; mkdir -p $R; cp .calls/commit.txt $R/; nvidia-smi -L > $R/gpus.txt
OUT_SAVE=$OUT
OUT=$R EPISODE_TIMEOUT_S=200 bash scripts/device/tool_episode_gpu.sh > $R/tool_episode.log 2>&1
T "tool episode rc=$?"; grep -i -E "nvlink|submitted|warm|check " $R/tool_episode.log | cut -c1-240 | tail -25
OUT=$R PROBLEMS=auto WORLD_SIZES=2 SWEEP_TIMEOUT_S=220 bash scripts/device/sweep_gpu.sh > $R/sweep.log 2>&1
T "sweep rc=$?"; grep -E "geomean|cells|correct" $R/sweep.log | head -8 | cut -c1-220
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
timeout 120 python3 scripts/bench_eval.py --device cuda --world-size 2 --repeats 5 --out $R --tag _ws2_s14 > $R/bench_eval.log 2>&1
T "bench_eval rc=$?"; grep -E "^\| [0-9]" $R/bench_eval_cuda_ws2_s14.md
IDS=hyena_cp_fftconv,moe_ep_fused_forward,moe_ep_fused_forward_lora,moe_combine,gnn_feature_grad_all2all,spherical_disco_conv,gnn_neighbor_aggregate
left=$(( 580 - ($(date +%s) - t0) ))
timeout $left python3 -m pkb_ray.cli problems check --device cuda --world-size 2 --ids $IDS --out $R --tag _ws2_later --problem-timeout 60 > $R/audit_ws2_later.log 2>&1
T "audit ws2 later rc=$?"; grep -E "ok, .* failed|: FAIL" $R/audit_ws2_later.log | cut -c1-250 | tail -8
tar czf $OUT_SAVE/s14_call1.tgz -C $R .
