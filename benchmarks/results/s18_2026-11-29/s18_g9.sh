# Session 18, call 9 (1 x H200): the per-process speed (g8: processes 0.241 or 0.249 ms, each
# steady): copies, matmuls, copies past a 20 GiB spacer, in eight fresh processes.
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
R=$OUT/g9; mkdir -p $R; cp .calls/commit.txt $R/
for i in 1 2 3 4 5 6 7 8; do timeout 60 python3 scripts/device/placement_probe.py --kinds --reps 20 > $R/kinds_$i.txt 2>&1; echo "process $i rc=$? $(grep '^kinds' $R/kinds_$i.txt)"; done
