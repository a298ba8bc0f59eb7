#!/usr/bin/env bash
# The test command of the README and of CI: install, then the whole suite in one pytest run,
# the fast tier first and the slow tier (marked `slow`) after (tests/conftest.py orders them
# and times each). Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'EOF'
bash scripts/test.sh [PYTEST ARGS...]

Installs pkb_ray and what the tests need (scripts/install.sh --test: PostgreSQL, Chromium),
then runs the whole test suite on CPU:
  tests/problems    the problem loader, includes, every problem's inputs and arguments
  tests/selfcheck   every reference against its truth.py in real gloo ranks
  tests/engine      the judge/worker engine on CPU: sandbox, wire, timing, the adversarial
                    candidates of tests/engine/adversarial/ (each must get its class)
  tests/generation  prompts, the litellm client against a local server, kernels_cache
  tests/driver      configuration, planning, sweeps, resume after a kill, node loss
  tests/agent       the tool-using agent;  tests/store  the journal
  tests/tracking    MLflow and `pkb ui` (a real browser where chromium and selenium exist)
  tests/report      metrics, leaderboard, heatmap
  tests/test_import_graph.py, tests/test_readme_commands.py
GPU tests (marker `gpu`) skip themselves without CUDA GPUs.

Tiers, in this order, each timed in the summary:
  fast  everything not marked `slow`: about 10 minutes on 2 cores
  slow  Ray clusters, every problem at world sizes 1, 2 and 4, real sweeps
The whole suite takes about 20 minutes on 2 cores. No test may take over 300 s.

A fast subset:
  bash scripts/test.sh -m "not slow"                 # the fast tier alone
  bash scripts/test.sh tests/problems tests/store    # some areas
  bash scripts/test.sh -k adversarial -x             # by name, stop at the first failure
  python3 -m pytest -m "not slow" tests/driver       # without reinstalling

Quarantined tests (marker `quarantine`) run and are reported as xfailed or xpassed with
their reason. Pytest's own options: python3 -m pytest --help.
EOF
}

case "${1:-}" in
  -h|--help) usage; exit 0 ;;
esac
bash scripts/install.sh --test
exec python3 -m pytest -q -ra --durations=20 "$@"
