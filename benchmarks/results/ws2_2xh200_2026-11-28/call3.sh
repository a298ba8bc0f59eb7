# Session 13, call 3 (2 x H200): the five collectives x5 (issue 37's spread), the four
# Ulysses experts x3 with the push all_to_all_dims (issue 43), self-timing half A at ws 2.
set -o pipefail
mkdir -p .devsite && cp .devsite_slim/site-py312.tgz .devsite/
source scripts/device/setup_gpu_machine.sh
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }
R=/tmp/res3; mkdir -p $R; cp .calls/commit.txt $R/
timeout 150 python3 scripts/expert_repeats.py --world-size 2 --repeats 3 --ids ulysses_all_to_all_dims,ulysses_heads_to_seq,ulysses_qkv_seq_to_heads,ulysses_seq_to_heads --cache-dir /tmp/er --out $R --tag _ulysses_push > $R/ulysses.log 2>&1
T "ulysses rc=$?"; grep -E "#[0-9]: |max/min|geomean" $R/ulysses.log | cut -c1-180 | tail -20
timeout 170 python3 scripts/expert_repeats.py --world-size 2 --repeats 5 --ids allgather,allreduce,alltoall,broadcast,reduce_scatter --cache-dir /tmp/er --out $R --tag _collectives > $R/collectives.log 2>&1
T "collectives rc=$?"; grep -E "max/min|geomean" $R/collectives.log | cut -c1-180 | tail -12
left=$(( 575 - ($(date +%s) - t0) ))
timeout $left python3 scripts/self_timing.py --device cuda --world-size 2 --evals 1 --trials 2 --budget-s $(( left - 40 )) --ids $(cat .calls/st_a.txt) --cache-dir /tmp/st --out $R --tag _ws2_a > $R/st_a.log 2>&1
T "self-timing A rc=$?"; tail -3 $R/st_a.log | cut -c1-300
tar czf $OUT/s13_call3.tgz -C $R .
