# Session 17, call C (2 x H200): upstream 68 at ws 2 (refused with its sizes now, issue 42),
# then the ws-2 GPU tests of tests/engine/test_gpu.py on this session's engine (0.5.4: exact
# integers, arenas sized per leaf) in what is left.
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
t0=$(date +%s); T(){ echo "[$(( $(date +%s) - t0 ))s] $*"; }; left(){ echo $(( 440 - ($(date +%s) - t0) )); }
R=/tmp/resc; mkdir -p $R; cp .calls/commit.txt $R/
timeout 120 python3 scripts/self_timing.py --device cuda --world-size 2 --evals 1 --trials 2 --source pkb:$PWD/.devtools/pkb_upstream --ids pkb_68_gnn_sparse_feature_fetch_projection --cache-dir /tmp/st_c --out $R --tag _ws2_pkb68 > $R/st68.log 2>&1
T "pkb_68 rc=$?"; grep -E "^pkb_" $R/st68.log | cut -c1-700
tar czf $OUT/s17_x2c.tgz -C $R .
timeout $(left) python3 -m pytest -q -ra -m gpu tests/engine/test_gpu.py --durations=10 > $R/pytest_gpu_ws2.log 2>&1
T "pytest test_gpu.py rc=$?"; tail -15 $R/pytest_gpu_ws2.log | cut -c1-220
tar czf $OUT/s17_x2c.tgz -C $R .
