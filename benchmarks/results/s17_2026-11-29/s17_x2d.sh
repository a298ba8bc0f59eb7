# Session 17, call D (2 x H200): upstream 68 at ws 2 again, after the sliced comparison (issue 42).
set -o pipefail
source scripts/device/setup_gpu_machine.sh > /dev/null 2>&1
R=/tmp/resd; mkdir -p $R; cp .calls/commit.txt $R/
timeout 100 python3 scripts/self_timing.py --device cuda --world-size 2 --evals 1 --trials 2 --source pkb:$PWD/.devtools/pkb_upstream --ids pkb_68_gnn_sparse_feature_fetch_projection --cache-dir /tmp/st_d --out $R --tag _ws2_pkb68b > $R/st68.log 2>&1
echo "pkb_68 rc=$?"; grep -E "^pkb_" $R/st68.log | cut -c1-900
tar czf $OUT/s17_x2d.tgz -C $R .
