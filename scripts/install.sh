#!/usr/bin/env bash
# Installs pkb_ray and what it needs into the current Python, idempotently.
# --test (scripts/test.sh passes it) also installs, as root, what the tests run for real:
# PostgreSQL (the team-tracking test) and Chromium with its driver (the browser tests).
# CPU machines get torch 2.13.0 (a file already on this workplace's disk; elsewhere a
# download); a GPU node keeps the CUDA build of torch it already has.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TEST_TOOLS=0
[ "${1:-}" = "--test" ] && TEST_TOOLS=1
if ! "$PY" -c 'import torch' 2>/dev/null; then
  "$PY" -m pip install -q torch==2.13.0
fi
# Reinstall when a dependency is missing, or when `pkb_ray` resolves to another checkout
# (an editable install made from a different clone would test that clone's code).
here=$(cd pkb_ray && pwd -P)
# Asked from / : from here, the checkout's own directory would shadow the installed one.
there=$(cd / && "$PY" -c 'import os, pkb_ray; print(os.path.realpath(os.path.dirname(pkb_ray.__file__)))' 2>/dev/null || true)
if [ "$here" != "$there" ] \
   || ! "$PY" -c 'import ray, mlflow, litellm, hydra, rich, matplotlib, scipy, pytest, pytest_timeout, selenium, psycopg, flask_wtf' 2>/dev/null; then
  "$PY" -m pip install -q -e '.[test]'
fi
# The candidates' sandbox (pkb_ray/engine/launch/): bubblewrap, and a user of its own.
# Without them candidates run in a weaker sandbox, and every result says which.
if [ "$(id -u)" = 0 ]; then
  if ! command -v bwrap >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    apt-get install -y -q bubblewrap >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q bubblewrap >/dev/null 2>&1; } \
      || echo "install.sh: could not install bubblewrap; candidates get a weaker sandbox (see each result's sandbox field)"
  fi
  # The no-network filter of guarded ranks (engine/worker/no_network.py) needs libseccomp.
  if ! ldconfig -p 2>/dev/null | grep -q libseccomp.so.2 && command -v apt-get >/dev/null 2>&1; then
    apt-get install -y -q libseccomp2 >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q libseccomp2 >/dev/null 2>&1; } \
      || echo "install.sh: could not install libseccomp2; guarded ranks keep network sockets (see each result's sandbox field)"
  fi
  if ! id pkb-sandbox >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin pkb-sandbox 2>/dev/null \
      || echo "install.sh: could not add the user pkb-sandbox; candidates run as this user"
  fi
fi
# Debian's packages for the tests that need a real server or browser; elsewhere those tests
# skip, saying which package is missing.
apt_install() {
  apt-get install -y -q "$@" >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "$@" >/dev/null 2>&1; }
}
if [ "$TEST_TOOLS" = 1 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
      apt_install postgresql || echo "install.sh: could not install postgresql; the team-tracking test skips"
    fi
    if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
      apt_install chromium chromium-driver || echo "install.sh: could not install chromium; the browser tests skip"
    fi
  else
    echo "install.sh: not root (or no apt-get): PostgreSQL and Chromium are not installed; their tests skip"
  fi
fi
