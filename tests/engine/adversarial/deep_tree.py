# HACK: leaves behind, in the only directory it may write (its /tmp, the sandbox's working
# directory on the host), a tree 3000 directories deep with a file at the bottom, a
# directory it made unreadable and unwritable, and a link to /etc. A harness that removes a
# sandbox with shutil.rmtree meets RecursionError (it recurses, ~1000 levels at most) and,
# with ignore_errors, silently leaves the tree on the host: each candidate leaves disk
# used that nobody reclaims (measured on main at 9c78ee4: 312 MB left by a 3000-level tree
# with files in it).
# EXPECTED: incorrect (it returns zeros), and nothing of it is left on the host once the
# sandbox is removed (tests/engine/test_adversarial_cpu.py looks for pkb_deep_marker).
import os

import torch.distributed as dist


def solution(x):
    top = os.path.join(os.environ.get("TMPDIR", "/tmp"), "pkb_deep_marker", f"rank{dist.get_rank()}")
    if not os.path.exists(top):  # each rank its own tree: the ranks share /tmp
        os.makedirs(os.path.join(top, "locked", "inner"))
        os.symlink("/etc", os.path.join(top, "etc_link"))
        os.chmod(os.path.join(top, "locked"), 0)
        here = os.getcwd()
        os.chdir(top)
        try:
            for _ in range(3000):
                os.mkdir("d")
                os.chdir("d")
            with open("bottom", "wb") as f:
                f.write(b"x" * (1 << 20))
        finally:
            os.chdir(here)
    return x * 0
