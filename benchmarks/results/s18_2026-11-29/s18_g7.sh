# Session 18, call 7 (1 x H200): placement_probe.py --held in three fresh processes (GPU time of
# 64 queued copies per place), and once unheld for contrast.
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
R=$OUT/g7; mkdir -p $R; cp .calls/commit.txt $R/
for i in 1 2 3; do timeout 60 python3 scripts/device/placement_probe.py --held > $R/probe_held_$i.txt 2>&1; echo "held $i rc=$?"; grep -v "^{" $R/probe_held_$i.txt; done
timeout 60 python3 scripts/device/placement_probe.py --held --calls 16 --places 32 > $R/probe_held_16.txt 2>&1; echo "held 16 calls rc=$?"; grep -v "^{" $R/probe_held_16.txt
