# Device call 4 (nvidia-h100-x1), ninth session: bench_eval on one machine of this tree (the
# judge polls for a timed run's answer), of 197bbb3 (0.4.11, the judge sleeps in select: this
# tree less spin.patch, which is `git diff` of the change against 197bbb3), and of 9c78ee4.
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
source scripts/device_runs/session8_2026-11-26/setup_base.sh
mkdir -p /tmp/prev && cp -r pkb_ray problems scripts conf pyproject.toml sweep.py /tmp/prev/
(cd /tmp/prev && patch -R -p1 -s < scripts/device_runs/session9_2026-11-26/spin.patch && grep -c answer_spin pkb_ray/engine/judge/session.py)
bench() {  # dir tag out
  local t0=$(date +%s)
  (cd $1 && PYTHONPATH=/tmp/site:$1 timeout 200 python3 scripts/bench_eval.py --device cuda --world-size 1 --repeats 5 --out $3 --tag $2 2>&1 | grep -v "^\[rank" | grep "^|\|max/min" | cut -c1-220 | tail -3)
  echo "$2: $(( $(date +%s) - t0 )) s"
}
bench $PWD _ws1_spin $OUT
bench /tmp/prev _ws1_197bbb3 $OUT/prev
bench /tmp/base _ws1_9c78ee4 $OUT/base
