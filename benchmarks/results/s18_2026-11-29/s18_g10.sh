# Session 18, call 10 (1 x H200): does a process's speed mode follow the CPU it starts on (the
# NUMA node of its pinned host memory: CUDA's pushbuffer)?
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
R=$OUT/g10; mkdir -p $R; cp .calls/commit.txt $R/
(lscpu; echo; nvidia-smi topo -m; echo; cat /sys/bus/pci/devices/*/numa_node 2>/dev/null | sort | uniq -c; ls /sys/devices/system/node/ 2>/dev/null) > $R/topology.txt 2>&1
grep -E "NUMA|Socket|Model name|^CPU\(s\)" $R/topology.txt; nvidia-smi topo -m 2>&1 | head -4
for c in 0 1 2 3 8 9 14 15 0 8 15 7; do timeout 60 taskset -c $c python3 scripts/device/placement_probe.py --kinds --reps 15 > $R/kinds_cpu$c.txt 2>&1; echo "cpu $c: $(grep '^kinds' $R/kinds_cpu$c.txt)"; done
