# Session 13, call 5 (4 x H200): the whole audit at ws 4 (issue 42), a re-audit at ws 2 of the
# 20 problems changed after today's ws-2 audit, then `python3 sweep.py eval.world_size=4` over
# every expert (issue 43), with the time left.
set -o pipefail
source scripts/device/setup_gpu_machine.sh
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }
R=/tmp/res5; mkdir -p $R; cp .calls/commit.txt $R/; nvidia-smi -L > $R/gpus.txt
OUT=$R TOTAL_S=245 bash scripts/audit_gpu.sh 4 > $R/audit_run.log 2>&1
T "audit ws4 rc=$?"; grep -E "ok, .* failed|: FAIL" $R/audit_gpu.log | cut -c1-250 | tail -14
IDS=conv3d_channel_parallel_allreduce,ddp_mlp_adam_step,fsdp_mlp_adamw_step,zero1_mlp_adam_step,zero2_mlp_adam_step,gnn_neighbor_aggregate,hyena_cp_fftconv,spherical_disco_conv,moe_ep_forward_balanced,moe_ep_forward_wide,int8_quantized_grad_allreduce,gnn_distributed_neighbor_sampling,gnn_negative_ranking,moe_ep_fused_forward,moe_ep_fused_forward_lora,vocab_parallel_logprob_topk_topp_backward,rope_allgather_qk,fsdp_clip_grad_norm,ep_clip_grad_norm,sync_batchnorm
CUDA_VISIBLE_DEVICES=0,1 timeout 90 python3 -m pkb_ray.cli problems check --device cuda --world-size 2 --ids $IDS --out $R --tag _changed --problem-timeout 60 > $R/audit_ws2_changed.log 2>&1
T "audit ws2 changed rc=$?"; grep -E "ok, .* failed|: FAIL" $R/audit_ws2_changed.log | cut -c1-250 | tail -8
left=$(( 515 - ($(date +%s) - t0) ))
OUT=$R PROBLEMS=auto WORLD_SIZES=4 SWEEP_TIMEOUT_S=$left bash scripts/device/sweep_gpu.sh > $R/sweep.log 2>&1
T "sweep ws4 rc=$?"; grep -E "geomean|cells \(|cells recorded" $R/sweep.log | head -5 | cut -c1-200
tar czf $OUT/s13_call5.tgz -C $R .
