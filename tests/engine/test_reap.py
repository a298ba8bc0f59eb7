"""Fork-and-reap (engine/worker/reap.py) with real processes: the one line per rank that the
zygote and the agent's rank runner write, and that the node, the verdict and the agent read."""

from __future__ import annotations

import faulthandler
import io
import os
import signal
import sys

from pkb_ray.engine.protocol.rank_ends import RankEnd, ends_in
from pkb_ray.engine.worker.reap import fork_ranks, reap


def _rank(r: int) -> int:
    # pytest swaps sys.stdout/stderr for its own buffers; the zygote's are fds 1 and 2.
    sys.stdout, sys.stderr = open(1, "w", closefd=False), open(2, "w", closefd=False)
    print(f"rank {r} in {os.path.basename(os.getcwd())}", flush=True)
    if r == 1:
        faulthandler.disable()  # pytest's, which would print this rank's stack to the terminal
        os.kill(os.getpid(), signal.SIGSEGV)
    if r == 2:
        raise ValueError("from rank 2")
    return 3 if r == 3 else 0


def test_each_rank_ends_with_one_line_that_parses_back(tmp_path):
    out = io.StringIO()
    ends = reap(fork_ranks(4, str(tmp_path), _rank), out)
    by_rank = ends_in(out.getvalue())
    assert {e.rank: e for e in ends} == by_rank
    assert by_rank == {0: RankEnd(0, 0), 1: RankEnd(1, None, "SIGSEGV"), 2: RankEnd(2, 1), 3: RankEnd(3, 3)}
    assert "rank 1 killed by signal SIGSEGV" in out.getvalue().splitlines()
    # Each rank's output lands in its own log, from its own directory.
    assert (tmp_path / "rank3.log").read_text().startswith("rank 3 in rank3")
    assert "ValueError: from rank 2" in (tmp_path / "rank2.log").read_text()


def test_only_whole_lines_parse_and_the_first_per_rank_counts():
    text = "noise\nrank 0 exited with code 2\nxrank 1 killed by signal SIGKILL\nrank 0 exited with code 0\n"
    assert ends_in(text) == {0: RankEnd(0, 2)}
    assert RankEnd.parse("rank 5 killed by signal 77") == RankEnd(5, None, "77")
    assert RankEnd.parse("rank 5 exit 1") is None
