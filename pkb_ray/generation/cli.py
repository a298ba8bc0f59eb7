"""`pkb models list [--json]` and `pkb prompt PROBLEM [--source S] [--hardware FILE | --profile FILE]`."""

from __future__ import annotations

import argparse
import json
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    models = subparsers.add_parser("models", help="model configs (conf/model/*.yaml)")
    msub = models.add_subparsers(dest="models_command", required=True, metavar="SUBCOMMAND")
    ls = msub.add_parser("list", help="one line per model: provider, limits, price, key variable")
    ls.add_argument("--json", action="store_true", help="one JSON object per model, as a list")
    ls.add_argument("--wide", action="store_true", help="every column, however wide the terminal")
    ls.set_defaults(handler=_models_list)

    prompt = subparsers.add_parser("prompt", help="print the prompt a model gets for a problem")
    prompt.add_argument("problem", help="problem id")
    prompt.add_argument("--source", default="builtin",
                        help="problem source: builtin, a directory, or pkb:/path (default builtin)")
    prompt.add_argument("--hardware", default=None,
                        help="file with the hardware section as text (default: written from --profile, "
                             "else the design target, labelled as not measured)")
    prompt.add_argument("--profile", default=None,
                        help="a node's measured hardware profile (<eval.cache_dir>/hardware/<fingerprint>.json)")
    prompt.add_argument("--world-size", type=int, default=2, help="ranks of the evaluation (default 2)")
    prompt.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    prompt.add_argument("--size", default=None,
                        help="the problem size the inputs are made at (default: bench on cuda, small on cpu)")
    prompt.add_argument("--load-timeout-s", type=float, default=None,
                        help="eval.timeouts.load_s (default: the config's)")
    prompt.add_argument("--json", action="store_true",
                        help="the messages, version and hash as JSON")
    prompt.add_argument("--raw", action="store_true",
                        help="the text exactly as the model gets it (default: long lines wrapped to the terminal)")
    prompt.set_defaults(handler=_prompt)


def _fmt_limit(v) -> str:
    return "-" if v in (None, "???") else f"{v:,}" if isinstance(v, int) else str(v)


def _model_id_text(model_id: str | None) -> str:
    """The litellm id; a template's unset `???` says where it is set."""
    return "(set model.model_id=...)" if model_id == "???" else model_id or "-"


def _models_list(args: argparse.Namespace) -> int:
    import os

    from pkb_ray.generation.models import api_model_names, list_model_names, model_summary
    from pkb_ray.generation.sources import source_for

    api = set(api_model_names())
    rows = []
    for name in list_model_names():
        s = model_summary(name)
        s["in_all"] = name in api
        # Whether the key variable is set, never its value.
        var = s.get("api_key_env")
        s["key_set"] = bool(var and os.environ.get(var)) if var else None
        rows.append(s)
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
        return 0
    from pkb_ray.console import Listing, print_listing, terminal_width, wrap

    price = lambda p: "-" if p is None else f"{p:.2f}"  # noqa: E731
    table = []
    for s in rows:
        source = source_for(s["provider"])
        var = s.get("api_key_env")
        table.append({
            "name": s["name"],
            "key": f"{var} {'set' if s['key_set'] else 'unset'}" if var else "-",
            "model_id": _model_id_text(s.get("model_id")) if source.calls_api else f"({source.what}, no API)",
            "$in/M": price(s.get("price_input_per_mtok")), "$out/M": price(s.get("price_output_per_mtok")),
            "provider": s["provider"], "conc": str(s["max_concurrency"]),
            "rpm": _fmt_limit(s.get("rpm")), "tpm": _fmt_limit(s.get("tpm")),
        })
    print_listing(Listing(table, priority=("name", "key", "model_id", "$in/M", "$out/M", "provider"),
                          right=("$in/M", "$out/M", "conc", "rpm", "tpm"), wrappable=("model_id",),
                          wide_hint="`pkb models list --wide` or `--json` shows every column."), wide=args.wide)
    ready = sum(1 for s in rows if s["in_all"] and s["key_set"])
    print(wrap(f"{len(rows)} configs; models=all = {len(api)} API models (not reference or expert, which "
               f"call no API, nor the openai_compatible template), {ready} of them with their key set "
               "(a model without its key is skipped)", width=terminal_width()))
    return 0


def _prompt(args: argparse.Namespace) -> int:
    from pkb_ray.config.schema import TimeoutConfig
    from pkb_ray.console import terminal_width, wrap
    from pkb_ray.generation.prompt import EvalContext, build_prompt
    from pkb_ray.problems import load_problem

    hardware = None
    if args.hardware:
        with open(args.hardware, encoding="utf-8") as f:
            hardware = f.read()
    size = args.size or ("bench" if args.device == "cuda" else "small")
    load_s = args.load_timeout_s if args.load_timeout_s is not None else TimeoutConfig().load_s
    profile = None
    if args.profile:
        from pkb_ray.engine.hardware import profile_from_dict

        with open(args.profile, encoding="utf-8") as f:
            profile = profile_from_dict(json.load(f))
    context = EvalContext(world_size=args.world_size, device=args.device, size=size,
                          load_timeout_s=load_s, profile=profile)
    p = build_prompt(load_problem(args.source, args.problem), hardware, context)
    if args.json:
        json.dump({"version": p.version, "hash": p.hash, "messages": p.messages},
                  sys.stdout, indent=1)
        print()
    elif args.raw:
        print(p.text)
        print(f"\n# prompt {p.version} sha256 {p.hash}", file=sys.stderr)
    else:
        width = terminal_width()
        print(_fold(p.text, width))
        print(wrap(f"\n# prompt {p.version} sha256 {p.hash}; long lines folded at {width} columns for "
                   "reading (the model gets each as one line: --raw prints the text as sent)", width=width),
              file=sys.stderr)
    return 0


def _fold(text: str, width: int) -> str:
    """Each line longer than `width` folded at word boundaries, its continuations indented
    like it: for a person reading the prompt; the hash is of the text as sent."""
    import textwrap

    out = []
    for line in text.splitlines():
        if len(line) <= width:
            out.append(line)
            continue
        indent = line[:len(line) - len(line.lstrip())]
        out.extend(textwrap.wrap(line, width=width, subsequent_indent=indent + "  ", break_on_hyphens=False)
                   or [line[:width]])
    return "\n".join(out)
