"""Problem files imported from several threads at once (a node actor's GPU groups): one
module name at a time, different names side by side (problems/common.import_file)."""

from __future__ import annotations

import threading
import time

from pkb_ray.problems.common import import_file

SLOW = """import sys, time
me = sys.modules[__name__]  # a half-made module is found under its own name
time.sleep({sleep})
"""


def _import_in_thread(path, name, out):
    def run():
        t0 = time.monotonic()
        import_file(path, name)
        out[name] = time.monotonic() - t0
    t = threading.Thread(target=run)
    t.start()
    return t


def test_one_problem_import_never_waits_for_another_problem(tmp_path):
    slow, quick = tmp_path / "slow.py", tmp_path / "quick.py"
    slow.write_text(SLOW.format(sleep=1.5))
    quick.write_text(SLOW.format(sleep=0))
    out: dict = {}
    a = _import_in_thread(slow, "pkb_test_lock.slow", out)
    time.sleep(0.2)  # the slow import holds its name's lock
    b = _import_in_thread(quick, "pkb_test_lock.quick", out)
    b.join(5)
    a.join(5)
    assert out["pkb_test_lock.quick"] < 1.0, out


def test_two_imports_of_one_name_take_turns(tmp_path):
    path = tmp_path / "same.py"
    path.write_text(SLOW.format(sleep=0.5))
    out: dict = {}
    first = _import_in_thread(path, "pkb_test_lock.same", out)
    time.sleep(0.1)
    done: dict = {}
    second = _import_in_thread(path, "pkb_test_lock.same", done)
    first.join(5)
    second.join(5)
    assert done["pkb_test_lock.same"] >= 0.3, (out, done)
