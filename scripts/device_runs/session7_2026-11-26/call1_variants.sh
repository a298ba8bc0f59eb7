# Device call 1 (nvidia-h100-x1), seventh session: the 13 references that missed 1.00 +- 0.03
# at world size 1 in the sixth session's full run, under three variants of the same tree:
#   A  as committed (the candidate's worker at SCHED_IDLE, the reference's not; both on one core)
#   B  both workers at SCHED_IDLE (cpu_pins.yields patched on the device only)
#   C  as A, every process with PYTHONHASHSEED=0 and address randomization off (setarch -R)
set -o pipefail
source scripts/device_runs/setup_gpu_machine.sh
IDS=$(cat scripts/device_runs/session7_2026-11-26/misses.txt)
t0=$(date +%s)
run() { local tag=$1; shift; timeout 170 "$@" python3 scripts/self_timing.py --device cuda --world-size 1 --evals 1 --trials 2 \
  --budget-s 160 --ids $IDS --out $OUT --tag _$tag 2>&1 | grep -E "#[0-9]: " | sed "s/^/$tag /" | cut -c1-200
  echo "$tag: $(( $(date +%s) - t0 )) s"; }
run A env
PYTHONHASHSEED=0 run C setarch -R env
sed -i 's/    return device == "cpu" or (role == "candidate" and pinned)/    return device == "cpu" or pinned/' pkb_ray/engine/cpu_pins.py
grep -n 'return device == "cpu"' pkb_ray/engine/cpu_pins.py
run B env
