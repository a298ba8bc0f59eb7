"""Import a candidate once, in a sandbox with no GPU, so that its `load_inline` compiles into
the sandbox's extension directory: `python -m pkb_ray.engine.worker.build_probe BUILD_START`
(engine/protocol/start.py: the candidate's file in the sandbox's directory).

Its last line is a BuildProbed record (ok, and the traceback when not). Whatever fails after compiling (no
GPU here, no process group) is for the evaluation to find out; the node reads a compiler
error out of the log (it is the candidate's to forge, which only ever fails itself).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import traceback

from pkb_ray.engine.protocol.start import BuildProbed, BuildStart, payload
from pkb_ray.engine.protocol import codec
from pkb_ray.engine.worker import file_limit


def main() -> int:
    file_limit.apply()
    path = os.path.join(os.environ["PKB_WORKDIR"], payload(BuildStart).candidate_file)
    res = BuildProbed(ok=True)
    try:
        spec = importlib.util.spec_from_file_location("pkb_candidate", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules["pkb_candidate"] = mod
        spec.loader.exec_module(mod)
    except BaseException:  # noqa: BLE001 - candidate code
        res = BuildProbed(ok=False, log=traceback.format_exc()[-20000:])
    print("\n" + json.dumps(codec.to_wire(res)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
