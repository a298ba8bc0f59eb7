# Device call 2 (nvidia-h100-x1), eighth session: bench_eval of this tree (the gate kernel
# handed to workers compiled, NCCL's communicator built at set-up, workers set up off the timed
# cores, the L2 set-aside read before it is set) and of 9c78ee4 on one machine; then py-spy.
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
source scripts/device_runs/session8_2026-11-26/setup_base.sh
pip install -q --no-deps --no-index --target /tmp/site .devtools/py_spy-*.whl 2>&1 | grep -v WARNING | tail -1
t0=$(date +%s)
timeout 250 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT --tag _ws1_new 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | cut -c1-220 | tail -3
echo "new: $(( $(date +%s) - t0 )) s"; t1=$(date +%s)
(cd /tmp/base && PYTHONPATH=/tmp/site:/tmp/base timeout 180 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $OUT/base --tag _ws1_9c78ee4 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | cut -c1-220 | tail -3)
echo "base: $(( $(date +%s) - t1 )) s"; t2=$(date +%s)
timeout 100 /tmp/site/bin/py-spy record --subprocesses --idle --nonblocking --rate 250 --format raw -o /tmp/prof.txt -- \
  python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 3 --shapes 8192x8192 --out /tmp/prof_out --tag _prof 2>&1 | tail -1
gzip -c /tmp/prof.txt > $OUT/prof_8192.txt.gz
echo "profile: $(( $(date +%s) - t2 )) s"
