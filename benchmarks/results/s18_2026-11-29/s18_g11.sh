# Session 18, call 11 (1 x H200): does the mode follow the CPU the CUDA context is born on, or
# the one the process runs on? (g10: CPU 0 slow twice, CPU 15 fast twice.)
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
R=$OUT/g11; mkdir -p $R; cp .calls/commit.txt $R/
for bc in 0:15 15:0 0:0 15:15 0:15 15:0 2:14 14:2 2:14 14:2; do b=${bc%%:*}; r=${bc##*:}
  timeout 60 python3 scripts/device/placement_probe.py --kinds --reps 15 --birth-cpu $b --run-cpu $r > $R/b${b}_r${r}.txt 2>&1
  echo "born on $b, run on $r: $(grep '^kinds' $R/b${b}_r${r}.txt)"; done
