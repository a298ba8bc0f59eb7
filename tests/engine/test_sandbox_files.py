"""What the harness reads or copies from a sandbox's directory: regular files only, never
through a symlink, never blocking on a FIFO (the sandbox's user owns that directory)."""

from __future__ import annotations

import os

from pkb_ray.engine.launch import copy_regular_tree, read_sandbox_file


def _tree(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("sk-harness-secret")
    box = tmp_path / "box"
    (box / "ext" / "sub").mkdir(parents=True)
    (box / "ext" / "sub" / "mod.so").write_bytes(b"\x7fELF built")
    os.utime(box / "ext" / "sub" / "mod.so", ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    (box / "ext" / "leak.so").symlink_to(secret)
    (box / "ext" / "linked_dir").symlink_to(tmp_path)
    os.mkfifo(box / "ext" / "pipe")
    (box / "rank0.log").symlink_to(secret)
    os.mkfifo(box / "zygote.log")
    (box / "rank1.log").write_text("x" * 100 + "last words")
    os.link(secret, box / "rank2.log")  # where protected_hardlinks is off, a sandbox can do this
    os.link(secret, box / "ext" / "hard.so")
    return box


def test_reads_regular_files_only(tmp_path):
    box = _tree(tmp_path)
    assert read_sandbox_file(str(box), "rank0.log", 1000) == b""  # a symlink: not followed
    assert read_sandbox_file(str(box), "zygote.log", 1000) == b""  # a FIFO: not opened for reading
    assert read_sandbox_file(str(box), "rank1.log", 10, tail=True) == b"last words"
    assert read_sandbox_file(str(box), "rank1.log", 3) == b"xxx"
    assert read_sandbox_file(str(box), "missing.log", 10) == b""
    assert read_sandbox_file(str(box), "rank2.log", 100) == b""  # a hard link: not read
    (tmp_path / "box_link").symlink_to(box)  # the directory itself swapped for a link
    assert read_sandbox_file(str(tmp_path / "box_link"), "rank1.log", 10) == b""


def test_copies_regular_files_with_their_times_and_nothing_else(tmp_path):
    box = _tree(tmp_path)
    out = tmp_path / "out"
    copy_regular_tree(str(box / "ext"), str(out))
    found = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    assert found == ["sub", "sub/mod.so"], found
    assert (out / "sub" / "mod.so").read_bytes() == b"\x7fELF built"
    assert (out / "sub" / "mod.so").stat().st_mtime_ns == 1_600_000_000_000_000_000  # torch's build checks it
    copy_regular_tree(str(tmp_path / "no_such"), str(tmp_path / "out2"))  # nothing there: nothing copied
    (tmp_path / "ext_link").symlink_to(box / "ext")
    copy_regular_tree(str(tmp_path / "ext_link"), str(tmp_path / "out3"))
    assert list((tmp_path / "out3").iterdir()) == []


def test_copies_are_bounded_plain_and_never_through_links(tmp_path):
    import pytest

    from pkb_ray.engine.launch import TreeRefused

    src = tmp_path / "src"
    src.mkdir()
    (src / "tool").write_bytes(b"#!/bin/sh\n")
    os.chmod(src / "tool", 0o4777)  # setuid, writable by all
    copy_regular_tree(str(src), str(tmp_path / "a"))
    assert oct((tmp_path / "a" / "tool").stat().st_mode & 0o7777) == "0o755"
    # A 1 TB sparse file (what `truncate -s 1T` leaves) or too many files: refused, not copied.
    with open(src / "huge", "wb") as f:
        f.truncate(1 << 40)
    with pytest.raises(TreeRefused, match="MiB"):
        copy_regular_tree(str(src), str(tmp_path / "b"))
    os.remove(src / "huge")
    (src / "x").write_text("x")
    with pytest.raises(TreeRefused, match="more than 1 files"):
        copy_regular_tree(str(src), str(tmp_path / "c"), max_files=1)
    # The destination swapped for a link, or holding a name already: refused.
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "d").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(TreeRefused, match="not a plain directory"):
        copy_regular_tree(str(src), str(tmp_path / "d"))
    assert list((tmp_path / "elsewhere").iterdir()) == []
    # The sandbox's directory itself swapped for a link (uid mode: its user owns it).
    (tmp_path / "sbx").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(TreeRefused, match="not a plain directory"):
        copy_regular_tree(str(src), str(tmp_path / "sbx" / "ext"))
    assert list((tmp_path / "elsewhere").iterdir()) == []
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "tool").write_text("planted")
    with pytest.raises(TreeRefused, match="File exists"):
        copy_regular_tree(str(src), str(tmp_path / "e"))
    assert (tmp_path / "e" / "tool").read_text() == "planted"


def test_file_limit_stops_a_file_at_its_size_and_cannot_be_raised(tmp_path):
    """What the sandbox entry points set (engine/worker/file_limit.py): past the limit a
    write fails (SIGXFSZ ignored: EFBIG), and the candidate cannot raise it again."""
    import subprocess
    import sys

    code = f"""
import resource, signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
from pkb_ray.engine.worker import file_limit
file_limit.apply(1 << 20)
try:
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 30, 1 << 30))
    print("RAISED")
except (ValueError, OSError):
    print("not raised")
with open({str(tmp_path / "big")!r}, "wb") as f:
    try:
        f.write(b"x" * (2 << 20))
        f.flush()
        print("WROTE")
    except OSError as e:
        print("stopped", e.errno)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert "stopped 27" in out, out  # 27: EFBIG
    import os

    if os.geteuid() != 0:  # root with CAP_SYS_RESOURCE may raise it; no sandbox user is that
        assert "not raised" in out, out
    assert (tmp_path / "big").stat().st_size <= 1 << 20


def test_a_dead_processs_run_root_is_removed_and_no_other(tmp_path, monkeypatch):
    """Roots of processes that are gone (SIGKILL skips atexit) are removed by the next
    process that makes one; a live process's root, or one from another pid namespace
    (a container sharing TMPDIR), is left alone."""
    import subprocess
    import tempfile

    from pkb_ray.engine.launch import roots

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(roots, "_root", None)
    ns = roots.owners.pid_namespace()
    gone = subprocess.Popen(["true"])
    gone.wait()
    (tmp_path / f"pkb_run_{gone.pid}_{ns}_x" / "pkb_sbx_y" / "d").mkdir(parents=True)
    (tmp_path / f"pkb_run_{gone.pid}_{ns + 1}_x").mkdir()
    (tmp_path / f"pkb_run_{os.getpid()}_{ns}_x").mkdir()
    root = roots.run_root()
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([f"pkb_run_{gone.pid}_{ns + 1}_x", f"pkb_run_{os.getpid()}_{ns}_x", os.path.basename(root)])
    roots._remove_run_root(os.getpid(), root)
    assert not os.path.exists(root)
