# Session 18, call 8 (1 x H200): is the 3.5% between processes (g7) per process or over time?
# Four fresh processes, each 12 rounds 0.5 s apart, held copies.
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
R=$OUT/g8; mkdir -p $R; cp .calls/commit.txt $R/
for i in 1 2 3 4; do timeout 60 python3 scripts/device/placement_probe.py --over-time 12 --reps 20 > $R/over_time_$i.txt 2>&1; echo "process $i rc=$?"; grep -v "^{" $R/over_time_$i.txt; done
