# Device call 5 (nvidia-h100-x1), ninth session, harness 0.4.11 (197bbb3): at 8192x8192, does a
# smaller batch (batch_ms 0.25: fewer calls per sample, each sample cheaper) cost fewer
# node-seconds for the same precision? Alternated on one machine: 1.0, 0.25, 1.0, 0.25.
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
for i in 1 2; do
  for b in 1.0 0.25; do
    t0=$(date +%s)
    timeout 120 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --shapes 8192x8192 \
      --timing batch_ms=$b --out $OUT/b$b --tag _ws1_batch${b}_$i 2>&1 | grep -v "^\[rank" | grep "^| 8192" | cut -c1-220
    echo "batch_ms=$b ($i): $(( $(date +%s) - t0 )) s"
  done
done
