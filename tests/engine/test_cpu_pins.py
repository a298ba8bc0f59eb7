"""Cores for a GPU evaluation's judge and workers (engine/node/cpu_pins.py): two per GPU (the
judge's, and one both workers share), from the top of what the process may use, none shared
between GPUs, none when the machine has too few; a process pinned stays there, every thread
of it, and one that yields runs at SCHED_IDLE."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from pkb_ray.engine.node.cpu_pins import PER_GPU, RESERVED, RankCores, plan, unpinned, yields


def test_three_cores_per_gpu_from_the_top_none_shared():
    cores = list(range(32))
    every = [plan([g], 8, cores)[0] for g in range(8)]
    assert every[0] == RankCores(judge=31, workers=30)
    used = [c for rc in every for c in (rc.judge, rc.workers)]
    assert len(set(used)) == 16 and min(used) >= RESERVED
    # A group of GPUs 2 and 3: rank r gets GPU r's cores, the same as when it is alone.
    assert plan([2, 3], 8, cores) == (every[2], every[3])


def test_too_few_cores_for_the_node_pins_nothing():
    assert plan([0], 8, list(range(17))) == ()  # 8 x 2 + 2 > 17
    assert plan([0], 8, list(range(18))) != ()
    assert plan([0], 1, list(range(PER_GPU + RESERVED))) != ()
    assert plan([0], 1, list(range(PER_GPU + RESERVED - 1))) == ()
    assert plan([], 1, list(range(64))) == ()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_pin_process_moves_every_thread():
    core = max(os.sched_getaffinity(0))
    code = ("import os, threading, time\n"
            "from pkb_ray.engine.wire.cores import pin_process\n"
            "t = threading.Thread(target=time.sleep, args=(2,)); t.start()\n"
            f"pin_process({core}, yields=True)\n"
            "tids = [int(x) for x in os.listdir('/proc/self/task')]\n"
            "print(sorted({c for tid in tids for c in os.sched_getaffinity(tid)}))\n"
            "t2 = threading.Thread(target=lambda: print(sorted(os.sched_getaffinity(0)),"
            " os.sched_getscheduler(0) == os.SCHED_IDLE)); t2.start(); t2.join()\n"
            "print(all(os.sched_getscheduler(tid) == os.SCHED_IDLE for tid in tids))\n"
            "print(open('/proc/self/autogroup').read().split()[-1] if os.path.exists('/proc/self/autogroup') else '19')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
                         start_new_session=True)  # its own autogroup: it sets the nice of that one
    assert out.stdout.split() == [f"[{core}]", f"[{core}]", "True", "True", "19"], out.stdout + out.stderr


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/proc/self/autogroup"),
                    reason="needs root (to drop to an unprivileged user) and autogroups")
def test_every_rank_of_a_worker_yields_and_is_pinned_not_only_the_first():
    """The ranks of a worker share a session (one autogroup); without CAP_SYS_ADMIN the
    kernel refuses a second nice write to it within 100 ms (EAGAIN). The second rank must
    still count as yielding (the group is at nice 19) and be pinned."""
    core = max(os.sched_getaffinity(0))
    code = ("import ctypes, os, sys\n"
            "from pkb_ray.engine.wire.cores import pin_process\n"
            "os.setsid()\n"
            "r, w = os.pipe()\n"
            "kids = []\n"
            "for _ in range(2):\n"
            "    pid = os.fork()\n"
            "    if pid == 0:\n"
            "        os.setuid(65534)  # no capabilities left, as in the sandbox\n"
            "        ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # dumpable: /proc/self is its own again\n"
            "        ok = pin_process(%d, yields=True)\n"
            "        os.write(w, f'{ok}:{sorted(os.sched_getaffinity(0))}\\n'.encode()); os._exit(0)\n"
            "    kids.append(pid)\n"
            "for pid in kids: os.waitpid(pid, 0)\n"
            "os.close(w); print(os.read(r, 1000).decode())\n" % core)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert sorted(out.stdout.split()) == [f"True:[{core}]"] * 2, out.stdout + out.stderr


def test_on_cpu_both_workers_yield_on_cuda_the_pinned_candidate_only():
    assert yields("cpu", "reference", pinned=False) and yields("cpu", "candidate", pinned=False)
    assert yields("cuda", "candidate", pinned=True)
    assert not yields("cuda", "reference", pinned=True)
    assert not yields("cuda", "candidate", pinned=False)  # unpinned on cuda: one class for both


def _no_smt(core: int) -> frozenset[int]:
    return frozenset({core})


def test_workers_set_up_on_the_cores_nothing_is_pinned_to():
    # A spare worker sets up (about a second of CPU) while the evaluation before it may be
    # timing on the workers' core: it does so on the cores plan() leaves, then moves.
    cores = list(range(32))
    spare = unpinned(range(8), cores, _no_smt)
    pinned = {c for g in range(8) for rc in plan([g], 8, cores) for c in (rc.judge, rc.workers)}
    assert spare == tuple(range(16)) and not pinned & set(spare)
    assert unpinned([0], list(range(PER_GPU + RESERVED)), _no_smt) == tuple(range(RESERVED))
    assert unpinned(range(8), list(range(17)), _no_smt) == () and unpinned([], cores, _no_smt) == ()


def test_setup_cores_leave_out_every_core_a_group_of_the_node_is_pinned_to():
    # An actor lent GPUs 4-7 of a node pins by those indices (plan): the cores they take lie
    # below the top 2 x 4, and no worker may set up there.
    cores = list(range(32))
    spare = set(unpinned([4, 5, 6, 7], cores, _no_smt))
    pinned = {c for g in (4, 5, 6, 7) for rc in plan([g], 4, cores) for c in (rc.judge, rc.workers)}
    assert pinned and not pinned & spare and spare | pinned == set(cores)


def test_setup_cores_keep_off_the_hyperthreads_of_pinned_cores():
    # 32 logical CPUs on 16 physical cores, CPU c and c + 16 sharing one (Linux's usual
    # numbering): 4 GPUs pin 31..24, whose siblings 15..8 no spare sets up on.
    def smt(core: int) -> frozenset[int]:
        return frozenset({core % 16, core % 16 + 16})

    cores = list(range(32))
    spare = unpinned(range(4), cores, smt)
    assert spare == tuple(range(8)) + tuple(range(16, 24))
    # Siblings adjacent (c, c ^ 1): the pinned pairs are each other's siblings, nothing else moves.
    assert unpinned(range(4), cores, lambda c: frozenset({c, c ^ 1})) == tuple(range(24))
    # Where keeping off the siblings would leave fewer than half the cores, they are used.
    assert unpinned(range(7), cores, smt) == tuple(range(18))


def test_smt_siblings_reads_the_kernel_or_names_the_core_alone():
    from pkb_ray.engine.node.cpu_pins import smt_siblings

    core = min(os.sched_getaffinity(0))
    assert core in smt_siblings(core)
    assert smt_siblings(10 ** 6) == frozenset({10 ** 6})


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_a_sandbox_starts_on_the_setup_cores_it_is_given(tmp_path):
    """A spare sandbox sets up on the node's setup cores from its first process on
    (bubblewrap and the interpreter's start-up too), not only once the zygote moves there."""
    from pkb_ray.engine import launch

    core = min(os.sched_getaffinity(0))
    src = ("import os\n"
           "open(os.path.join(os.environ['PKB_WORKDIR'], 'cores'), 'w').write(str(sorted(os.sched_getaffinity(0))))\n")
    box = launch.Sandboxed(launch.plan_sandbox(), (str(tmp_path),), gpu=False, files={"candidate.py": src},
                           cores=(core,))
    proc = launch.start(launch.SpawnSpec("pkb_ray.engine.worker.build_probe",
                                         launch.BuildStart(candidate_file="candidate.py"),
                                         launch.child_env("cpu", 1), sandbox=box))
    try:
        proc.popen.communicate(timeout=120)
        assert proc.read_file("cores", 100).decode() == f"[{core}]", proc.log_tail("zygote.log")
        assert proc.cores == (core,)
    finally:
        proc.cleanup()


def test_ranks_still_yield_while_another_session_writes_its_autogroup_nice():
    """The kernel takes one autogroup nice write per 100 ms across the host, not per group:
    a fresh worker's ranks must get their yield while another session's processes write
    theirs (the ranks of a second group starting beside them), by retrying a refused write."""
    if not os.path.exists("/proc/self/autogroup"):
        pytest.skip("no autogroups on this kernel")
    core = max(os.sched_getaffinity(0))
    # Another session writes every 150 ms for 2 s: each of its writes refuses every other
    # for the next 100 ms, as two groups' workers starting at once do.
    neighbour = subprocess.Popen([sys.executable, "-c",
                                  "import os, time\nos.setsid()\nend = time.monotonic() + 2.0\n"
                                  "while time.monotonic() < end:\n"
                                  "    try:\n        open('/proc/self/autogroup', 'w').write('19')\n"
                                  "    except OSError:\n        pass\n    time.sleep(0.15)\n"])
    try:
        time.sleep(0.2)
        for _ in range(4):  # four fresh sessions, each landing at a random point of the cycle
            code = ("import ctypes, os\n"
                    "from pkb_ray.engine.wire.cores import pin_process\n"
                    "os.setsid()\n"
                    "os.setuid(65534)  # no CAP_SYS_ADMIN, as in the sandbox\n"
                    "ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)\n"
                    "print(pin_process(%d, yields=True))\n" % core)
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
            assert out.stdout.split() == ["True"], out.stdout + out.stderr
    finally:
        neighbour.wait(timeout=10)
