# Device call B (nvidia-h100-x1, the machine of call A), tenth session: bench_eval of 9c78ee4
# then of this tree (that order: the first bench on a machine runs its trials slower, session
# 9's call 8), both shapes, with the GPU's clocks sampled every 100 ms to line up with each
# evaluation (bench_eval's started_at / ended_at).
# Not run in the tenth session: 174 s of device time were left, too few to start a machine.
set -o pipefail
mkdir -p .devsite && cp .devsite_slim/site-py312.tgz .devsite/
source scripts/device_runs/setup_gpu_machine.sh
source scripts/device_runs/session8_2026-11-26/setup_base.sh
q=timestamp,clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_throttle_reasons.active
nvidia-smi --query-gpu=$q --format=csv,noheader >/dev/null 2>&1 || q=timestamp,clocks.sm,clocks.mem,temperature.gpu,power.draw
echo "clocks: $q"
nvidia-smi --query-gpu=$q --format=csv,noheader -lms 100 > $OUT/clocks.csv 2>&1 &
smi=$!
t1=$(date +%s)
(cd /tmp/base && PYTHONPATH=/tmp/site:/tmp/base timeout 200 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT/base --tag _ws1_9c78ee4 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | cut -c1-220 | tail -3)
echo "base: $(( $(date +%s) - t1 )) s"; t0=$(date +%s)
timeout 240 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT --tag _ws1_0.4.11 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | cut -c1-220 | tail -3
echo "new: $(( $(date +%s) - t0 )) s"
kill $smi; date -u +%s
