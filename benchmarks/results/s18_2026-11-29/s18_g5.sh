# Session 18, call 5 (1 x H200): placement_probe.py in three fresh processes.
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
R=$OUT/g5; mkdir -p $R; cp .calls/commit.txt $R/
for i in 1 2 3; do timeout 60 python3 scripts/device/placement_probe.py > $R/probe_$i.txt 2>&1; echo "run $i rc=$?"; grep -v "^{" $R/probe_$i.txt; done
