"""Does the first launch of a copy kernel behind a held gate wait for the gate's timeout?

    python3 lazy_load_check.py old   # set-up as 0.4.9's warm_up left it (foreach's slow route only)
    python3 lazy_load_check.py new   # this tree's warm_up()

A held gate (a kernel spinning until the page opens, 100 ms timeout), then the multi-tensor
copy that delivers three 1024x1024 outputs (foreach's fast route), as run_calls queues it.
Prints how long queueing the copy took on the host, and whether the gate expired.
"""
import sys
import time

import torch

from pkb_ray.engine.wire.gate import GatePage, LaunchGate, gate_image
from pkb_ray.engine.worker.run import WARM_DTYPES, _copy, _foreach_copy, warm_up

mode = sys.argv[1]
torch.zeros(1, device="cuda")
if mode == "new":
    warm_up("cuda")
else:
    for dtype in WARM_DTYPES:
        src = torch.zeros((4, 4), dtype=dtype, device="cuda")
        dst = torch.empty_like(src)
        _foreach_copy([dst, dst.t()], [src, src])
        _copy(dst.t(), src)
    torch.cuda.synchronize()
page = GatePage(GatePage.create_fd(), 1)
gate = LaunchGate(page, 0, 0, 100_000, gate_image())
for gen, dtype in enumerate((torch.float32, torch.bfloat16), start=1):
    srcs = [torch.zeros(1024, 1024, dtype=dtype, device="cuda") for _ in range(3)]
    dsts = [torch.empty_like(t) for t in srcs]
    torch.cuda.synchronize()
    gate.close(gen)
    t0 = time.perf_counter()
    _foreach_copy(dsts, srcs)
    queued_ms = (time.perf_counter() - t0) * 1e3
    page.open(0, gen)
    torch.cuda.synchronize()
    print(f"{mode}: {dtype}: queueing the copy took {queued_ms:.2f} ms; gate expired {page.expired(0)} time(s) so far")
