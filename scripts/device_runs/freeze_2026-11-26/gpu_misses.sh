# Device call (nvidia-h100-x1): what sets apart the references that time unequal against
# themselves at world size 1 (events agreeing with the window): A as committed; B with more
# untimed trials (the candidate's worker runs `trials` calls before timing, the reference's
# one: a warmer allocator?); C with neither worker yielding (on cuda the candidate's ranks run
# at SCHED_IDLE beside the reference's at normal priority; patched here on the device only).
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
IDS=moe_ep_fused_forward_lora,distributed_knn_topk,gated_deltanet_ulysses
t0=$(date +%s)
run() { timeout 200 python3 scripts/self_timing.py --device cuda --world-size 1 --evals 2 --trials $2 --ids $IDS \
  --out $OUT --tag _$1 2>&1 | grep -E "#[0-9]: " | sed "s/^/$1 /" | cut -c1-230; echo "$1: $(( $(date +%s) - t0 )) s"; }
run A_trials2 2
run B_trials6 6
sed -i 's/    return device == "cpu" or (role == "candidate" and pinned)/    return device == "cpu"/' pkb_ray/engine/cpu_pins.py
grep -n 'return device == "cpu"' pkb_ray/engine/cpu_pins.py
run C_noyield 2
