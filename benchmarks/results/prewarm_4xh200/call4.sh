set -o pipefail
mkdir -p .devsite && cp .devsite_slim/site-py312.tgz .devsite/
source scripts/device/setup_gpu_machine.sh
R=/tmp/res4; mkdir -p $R
timeout 100 python3 -m pytest -v -s -m gpu "tests/engine/test_gpu_bounds.py" -k "fork_storm or reclones" -p no:cacheprovider --tb=short -rfE > $R/pytest_bounds2.log 2>&1
grep -E "PASSED|FAILED|SKIPPED|^E |passed|failed|^\[" $R/pytest_bounds2.log | cut -c1-300 | tail -20
tar czf $OUT/call4.tgz -C $R .
