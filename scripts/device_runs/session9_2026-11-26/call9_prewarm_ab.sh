# Device call 9 (nvidia-h100-x1), ninth session, harness 0.4.11: are the noisy episodes in a
# timing phase (both halves slower for several samples) the next evaluation's sandboxes
# setting up on the GPU? Launch-bound references against themselves, twice each, with the
# spares started at the evaluation's start (this tree) and after it ends (a copy of this tree
# with node.py's `overlap` off, as on cpu). Every evaluation's samples are dumped.
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
python3 scripts/device_runs/session7_2026-11-26/dump_samples.py
IDS=allreduce,broadcast,gemm_allreduce,allgather,alltoall,reduce_scatter,gated_deltanet_ulysses,kimi_delta_attention_cp_tp
mkdir -p /tmp/late && cp -r pkb_ray problems scripts conf pyproject.toml sweep.py /tmp/late/
sed -i 's/^        overlap = self.spec.device != "cpu"$/        overlap = False/' /tmp/late/pkb_ray/engine/node.py
grep -c "overlap = False" /tmp/late/pkb_ray/engine/node.py
for i in 1 2; do
  t0=$(date +%s)
  PKB_SAMPLES_DUMP=$OUT/samples_early_$i.jsonl timeout 140 python3 scripts/self_timing.py --device cuda --world-size 1 --evals 1 --trials 2 \
    --ids $IDS --out $OUT --tag _early_$i 2>&1 | grep -E "#0: " | cut -c1-100
  echo "early $i: $(( $(date +%s) - t0 )) s"; t0=$(date +%s)
  (cd /tmp/late && PYTHONPATH=/tmp/site:/tmp/late PKB_SAMPLES_DUMP=$OUT/samples_late_$i.jsonl timeout 140 python3 scripts/self_timing.py --device cuda --world-size 1 --evals 1 --trials 2 \
    --ids $IDS --out $OUT --tag _late_$i 2>&1 | grep -E "#0: " | cut -c1-100)
  echo "late $i: $(( $(date +%s) - t0 )) s"
done
