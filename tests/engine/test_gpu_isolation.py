"""A GPU group's sandbox holds its own GPUs only (engine/launch/gpus.py): on CPU, against a
node's driver entries laid out in a directory, and bubblewrap's arguments built from them.
The real thing is test_gpu_isolation_gpu below, on a node of at least 2 GPUs."""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest

from pkb_ray.engine.launch import gpus, mounts

# bus ids out of minor order, as on nodes where the driver probed the GPUs unsorted
NODE = [("0000:c1:00.0", 2), ("0000:18:00.0", 0), ("0000:9a:00.0", 3), ("0000:2a:00.0", 1)]


@pytest.fixture
def node(tmp_path):
    proc, dev = tmp_path / "gpus", tmp_path / "dev"
    dev.mkdir()
    for bus, minor in NODE:
        (proc / bus).mkdir(parents=True)
        (proc / bus / "information").write_text(f"Model: H100\nDevice Minor: {minor}\nBus Location: {bus}\n")
        (dev / f"nvidia{minor}").write_text("")
    return str(proc), str(dev)


def test_the_node_is_numbered_in_bus_order_as_nvidia_smi_does(node):
    found = gpus.node_gpus(*node)
    assert [(g.index, g.bus_id, g.minor) for g in found] == [
        (0, "0000:18:00.0", 0), (1, "0000:2a:00.0", 1), (2, "0000:9a:00.0", 3), (3, "0000:c1:00.0", 2)]


def test_a_group_sees_its_gpus_renumbered_from_zero_in_its_own_order(node):
    v = gpus.view((3, 2), *node)
    # node index 3 is minor 2 on bus c1, index 2 is minor 3 on bus 9a; inside, CUDA numbers
    # them by bus (9a: 0, c1: 1), and rank 0 must keep node GPU 3
    assert v.device_nodes[:2] == ("/dev/nvidia2", "/dev/nvidia3")
    assert not any(re.fullmatch(r"/dev/nvidia[01]", n) for n in v.device_nodes)
    assert v.inside_cvd == "1,0"
    assert v.proc_entries == ("0000:c1:00.0", "0000:9a:00.0")
    assert sorted(v.deny_rules) == ["c 195:0 rwm", "c 195:1 rwm"]
    assert "only 3,2 bound" in v.description


def test_a_gpu_set_is_read_once_as_indices_and_none_binds_every_gpu(node, monkeypatch):
    """CUDA_VISIBLE_DEVICES becomes the node's indices where it is read: UUIDs (or prefixes
    of them) by nvidia-smi's table; what names no whole GPU is refused, not guessed."""
    monkeypatch.setattr(gpus, "_uuid_indices", lambda: {"GPU-8f1e0000": 2, "GPU-77aa1111": 0})
    assert gpus.visible_gpus("GPU-8f1e,GPU-77aa") == (2, 0)
    assert gpus.visible_gpus("4,5,6,7") == (4, 5, 6, 7) and gpus.visible_gpus("") == ()
    with pytest.raises(ValueError, match="whole GPUs"):
        gpus.visible_gpus("MIG-4f2a")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert gpus.visible_gpus() is None
    assert gpus.first_gpus((4, 5, 6, 7), 2) == (4, 5)
    v = gpus.view(None, *node)
    assert v.inside_cvd is None and len([n for n in v.device_nodes if re.search(r"nvidia\d+$", n)]) == 4
    assert "every GPU" in v.description


def test_bubblewrap_binds_the_group_and_masks_the_drivers_other_entries(node, tmp_path):
    v = gpus.view((1,), *node)
    args = mounts.bwrap_args("bwrap", str(tmp_path), v, [], {}, str(tmp_path), sized_shm=False)
    binds = [args[i + 1] for i, a in enumerate(args) if a == "--dev-bind"]
    assert "/dev/nvidia1" in binds and not any(re.fullmatch(r"/dev/nvidia[023]", b) for b in binds)
    proc = args.index("--proc")
    i = args.index("--tmpfs", proc)
    assert args[i + 1] == gpus.PROC_GPUS
    assert args[i + 2:i + 5] == ["--ro-bind", f"{gpus.PROC_GPUS}/0000:2a:00.0", f"{gpus.PROC_GPUS}/0000:2a:00.0"]
    assert args[i + 5:i + 7] == ["--remount-ro", gpus.PROC_GPUS]


def _gpu_count() -> int:
    return len([g for g in gpus.node_gpus() if os.path.exists(f"/dev/nvidia{g.minor}")])


@pytest.mark.gpu
@pytest.mark.skipif(_gpu_count() < 2 or not shutil.which("bwrap"), reason="needs 2+ GPUs and bubblewrap")
def test_gpu_isolation_gpu(cache_dir):
    """The neighbour attack (adversarial/gpu/reaches_neighbour.py) at world size 1 on the
    last GPU this process may use, in a bubblewrap sandbox: every way it tries sees that one GPU."""
    from pkb_ray.config.schema import EvalConfig
    from pkb_ray.engine import EvalRequest, evaluate
    from pkb_ray.engine.launch.gpus import visible_gpus
    from pkb_ray.problems.includes import read_candidate_file

    from .conftest import HERE

    # this process's last GPU (the node's, unless the suite's xdist worker holds a group)
    last = (visible_gpus() or tuple(range(_gpu_count())))[-1]
    src = read_candidate_file(HERE / "adversarial" / "gpu" / "reaches_neighbour.py", root=HERE)
    res = evaluate(EvalRequest(problem_id="allreduce", problems_source="builtin", candidate_source=src,
                               device="cuda", size="small",
                               eval=EvalConfig(world_size=1, trials=2, time_candidates=False,
                                               cache_dir=cache_dir)), gpus=(last,))
    assert res.sandbox.startswith("bwrap"), res.sandbox
    assert res.failure is not None and res.failure.value == "runtime_error", (res.failure, res.message)
    text = res.message + "\n" + res.log
    seen, _ = json.JSONDecoder().raw_decode(text, text.index("REACHES {") + len("REACHES "))
    assert seen["torch_count"] == 1 and seen["child_count"] == 1, seen
    assert seen["dev_nodes"] == 1 and seen["nvml_count"] in (1, None), seen
    assert seen["proc_gpus"] == 1 and not seen["opened_others"], seen


def test_a_groups_device_rule_refuses_the_device_to_every_process_in_it():
    """cgroup v1's devices controller, as a sandbox's group refuses the other GPUs' minors
    (c 195:N); here the rule is for /dev/null (c 1:3), which every machine has."""
    import subprocess
    import sys

    from pkb_ray.engine import cgroup
    from pkb_ray.engine.launch import bounds

    run = bounds.run_group()
    if not run.group.has("devices"):
        pytest.skip("no cgroup v1 devices controller here (cgroup v2 has none: bind mounts alone)")
    group = run.group.child(f"{cgroup.SANDBOX_PREFIX}devices_test_{os.getpid()}", ("devices",))
    try:
        group.deny_devices(["c 1:3 rwm"])
        code = ("import os, sys\nsys.stdin.readline()\n"
                "try:\n    os.open('/dev/null', os.O_RDONLY); print('opened')\n"
                "except OSError as e:\n    print(e.errno)\n")
        p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        group.join(p.pid)
        said, _ = p.communicate("go\n", timeout=60)
        assert said.strip() == "1", said  # EPERM
    finally:
        assert group.remove()
