# Device call (nvidia-h100-x1): after c4af3bb (no spare sandbox with a dead rank is taken;
# freezers found at prepare): the GPU test, and the pair that made a harness_error in
# self_timing_all.sh ids_b.txt (tp_rmsnorm_sharded_hidden fills the GPU, then
# ulysses_all_to_all_dims took the sandbox started ahead meanwhile).
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
t0=$(date +%s)
timeout 200 python3 -m pytest tests/engine/test_gpu_ws1.py -m gpu -q -x 2>&1 | tail -2
echo "gpu tests: $(( $(date +%s) - t0 )) s"
timeout 300 python3 scripts/self_timing.py --device cuda --world-size 1 --evals 1 --trials 2 \
  --ids tp_mlp,tp_rmsnorm_sharded_hidden,ulysses_all_to_all_dims,ulysses_attention --out $OUT --tag _ws1_0.4.3_dead_spare 2>&1 \
  | grep -E "#0: |within 3%" | cut -c1-260
echo "total: $(( $(date +%s) - t0 )) s"
