"""Proves a litellm pack (scripts/pack_litellm.sh) is enough for a tools-mode model call.

    bash scripts/pack_litellm.sh --python-version 3.11 /tmp/p     # this machine's Python
    python3 scripts/check_litellm_pack.py /tmp/p/litellm-py311.txz

The pack is unpacked and used by a venv made without site-packages, whose PYTHONPATH holds
only the pack, a stand-in directory and this repo. The stand-in links this machine's copies of
what the pack assumes is already on the GPU machine: the site pack's (omegaconf, hydra,
antlr4, jsonschema and friends) and the torch image's (PyYAML, typing_extensions, jinja2,
markupsafe, packaging, filelock, fsspec). In that interpreter, pkb_ray's ToolModelClient sends
one tool-call completion to the scripted ToolServer (tests/agent/tool_server.py, real HTTP
through aiohttp) and one to a closed port; the first must come back as the tool call, the
second as a classified network failure, and every module loaded must come from the standard
library, the pack, the stand-in or the repo. Prints which third-party packages were imported
from where, and which packed ones were never imported.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

ASSUMED_THERE = {
    "site pack": ["omegaconf", "hydra-core", "antlr4-python3-runtime", "jsonschema",
                  "jsonschema-specifications", "referencing", "rpds-py"],
    "torch image": ["PyYAML", "typing_extensions", "Jinja2", "MarkupSafe", "packaging", "filelock", "fsspec"],
}

CHILD = r"""
import asyncio, json, sys
from tests.agent.tool_server import ToolServer, Turn
from pkb_ray.config.schema import ModelConfig
from pkb_ray.agent.model import ToolModelClient

TOOLS = [{"type": "function", "function": {"name": "check", "description": "Check a module.",
          "parameters": {"type": "object", "properties": {"source": {"type": "string"}},
                         "required": ["source"]}}}]
MESSAGES = [{"role": "system", "content": "You write kernels."}, {"role": "user", "content": "Go."}]

def client(api_base):
    cfg = ModelConfig(name="toolbot", provider="openai_compatible", model_id="toolbot", api_base=api_base,
                      max_retries=0, request_timeout_s=30.0, price_input_per_mtok=1.0, price_output_per_mtok=4.0)
    return ToolModelClient(cfg, TOOLS)

with ToolServer(lambda body: Turn("Trying.", [("check", {"source": "x = 1"})])) as server:
    ok = asyncio.run(client(server.url).complete(MESSAGES))
    sent = server.bodies[0]
down = asyncio.run(client("http://127.0.0.1:9/v1").complete(MESSAGES))
files = {name: getattr(m, "__file__", None) for name, m in list(sys.modules.items())}
print(json.dumps({
    "tool_calls": [[c.name, json.loads(c.arguments)] for c in ok.tool_calls],
    "failure": ok.failure and ok.failure.value, "cost_usd": ok.cost_usd, "sent_tools": sent.get("tools"),
    "down_failure": down.failure and down.failure.value, "down_message": down.message[:200],
    "files": files, "stdlib": [sys.base_prefix, sys.base_exec_prefix],
}))
"""


def link_assumed(standin: Path) -> None:
    """Links each assumed distribution's top-level files and its metadata into `standin`."""
    for dists in ASSUMED_THERE.values():
        for name in dists:
            dist = md.distribution(name)
            tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
            for top in tops:
                src = Path(dist.locate_file(top))
                if src.exists() and not (standin / top).exists():
                    (standin / top).symlink_to(src)


def origin(path: str | None, roots: dict[str, str], stdlib: list[str]) -> str:
    if not path:
        return "builtin"
    for label, root in roots.items():
        if path.startswith(root + os.sep):
            return label
    if any(path.startswith(p + os.sep) for p in stdlib) and "site-packages" not in path:
        return "stdlib"
    return "ELSEWHERE"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pack", help="a .txz from scripts/pack_litellm.sh, built for this Python's version")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pkb_litellm_check_"))
    try:
        return check(Path(args.pack), work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check(pack_file: Path, work: Path) -> int:
    pack, standin, venv = work / "pack", work / "standin", work / "venv"
    pack.mkdir()
    standin.mkdir()
    with tarfile.open(pack_file) as tar:
        tar.extractall(pack, filter="data")
    link_assumed(standin)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work),
           "PYTHONPATH": os.pathsep.join([str(pack), str(standin), str(REPO)]), "PYTHONNOUSERSITE": "1"}
    proc = subprocess.run([str(venv / "bin" / "python"), "-c", CHILD], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        print(proc.stderr[-5000:], file=sys.stderr)
        print(f"FAILED: the call in the isolated interpreter exited {proc.returncode}")
        return 1
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    roots = {"pack": str(pack), "stand-in": str(standin), "repo": str(REPO)}
    by_origin: dict[str, set[str]] = {}
    for name, path in out["files"].items():
        by_origin.setdefault(origin(path, roots, out["stdlib"]), set()).add(name.split(".")[0])
    packed = {p.name.split(".")[0] for p in pack.iterdir() if not p.name.endswith(".dist-info")}
    unused = sorted(packed - by_origin.get("pack", set()))
    report = {"tool_calls": out["tool_calls"], "failure": out["failure"], "cost_usd": out["cost_usd"],
              "unreachable_server": [out["down_failure"], out["down_message"]],
              "from_pack": sorted(by_origin.get("pack", ())), "from_stand_in": sorted(by_origin.get("stand-in", ())),
              "packed_but_not_imported": unused, "elsewhere": sorted(by_origin.get("ELSEWHERE", ()))}
    print(json.dumps(report, indent=1))
    good = (out["tool_calls"] == [["check", {"source": "x = 1"}]] and out["failure"] is None
            and out["sent_tools"] and out["down_failure"] is not None and not report["elsewhere"])
    print("OK: the pack is enough" if good else "FAILED: see above")
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
