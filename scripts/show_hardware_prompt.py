"""Measure this GPU node's hardware profile as a sweep would, and print the prompt's hardware
section and one problem's roofline line written from it (issue 17 item 6).

    PYTHONPATH=$PWD python3 scripts/show_hardware_prompt.py --world-size 2 \
        --cache-dir /tmp/pkb_cache --out benchmarks/results/hardware_prompt.md

The profile is measured in a fresh process (this one never initialises CUDA, as the node
actor does not), cached under <cache-dir>/hardware/<fingerprint>.json; a second run reads it.
"""

from __future__ import annotations

import argparse
import dataclasses
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--cache-dir", default="~/.cache/pkb_ray")
    ap.add_argument("--problem", default="allreduce")
    ap.add_argument("--out", default=None, help="also write what is printed to this file")
    args = ap.parse_args()

    from pkb_ray.engine.node.evaluation import node_profile
    from pkb_ray.generation.hardware_text import hardware_section
    from pkb_ray.generation.prompt import EvalContext, build_prompt
    from pkb_ray.problems import load_problem

    t0 = time.perf_counter()
    profile = node_profile("cuda", args.cache_dir, None)
    first_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    again = node_profile("cuda", args.cache_dir, None)
    cached_s = time.perf_counter() - t0
    lines = [f"# Hardware section measured on this node (world size {args.world_size})", ""]
    if profile is None:
        lines.append("No profile could be measured: the prompts would state the design target.")
    else:
        fields = {k: v for k, v in dataclasses.asdict(profile).items() if k != "topology"}
        lines += [f"profile ({first_s:.1f} s to get, {cached_s:.2f} s from the cache, same: "
                  f"{again == profile}):", "", "```", *(f"{k}: {v}" for k, v in fields.items()),
                  "```", "", "nvidia-smi topo -m:", "", "```", profile.topology, "```", ""]
    section = hardware_section(profile, args.world_size, "cuda")
    context = EvalContext(world_size=args.world_size, profile=profile)
    user = build_prompt(load_problem("builtin", args.problem), None, context).messages[-1]["content"]
    roofline = next((ln for ln in user.splitlines() if ln.startswith("- Roofline")), "(no roofline line)")
    lines += ["## Hardware section", "", section, "", f"## {args.problem}'s roofline line", "", roofline]
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0 if profile is not None and profile.complete else 1


if __name__ == "__main__":
    raise SystemExit(main())
