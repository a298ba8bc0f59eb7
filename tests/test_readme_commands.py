"""Every command the README shows parses: `python sweep.py ...` composes (what `--cfg job`
prints, after the same unknown-key check), and `pkb ...` parses with the real argparse
parser (placeholders such as PROBLEM stand as given; `[--opt]` groups and `a|b` choices
are tried both left out and given, the first choice taken)."""

from __future__ import annotations

import argparse
import importlib
import re
import shlex
from pathlib import Path

import pytest

from pkb_ray.cli import _COMMANDS
from pkb_ray.config import compose_config
from pkb_ray.config.overrides import check_overrides

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_commands() -> list[str]:
    """Commands on the README's indented code lines (continuations joined, comments cut,
    two commands side by side split)."""
    lines, joined = README.read_text(encoding="utf-8").splitlines(), []
    i = 0
    while i < len(lines):
        line = lines[i]
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1] + " " + lines[i].strip()
        i += 1
        if line.startswith("    "):
            joined.append(line.strip())
    out = []
    for line in joined:
        line = re.sub(r"\s+#.*$", "", line)
        for part in re.split(r"\s{2,}(?=pkb |python3? sweep\.py)", line):
            part = part.removeprefix("bash scripts/install.sh && ")
            if part.startswith(("pkb ", "python sweep.py", "python3 sweep.py")):
                out.append(part)
    return out


def _pkb_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pkb")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in sorted(set(_COMMANDS.values())):
        importlib.import_module(module).register(sub)
    return parser


def _as_written(words: list[str], optional: bool) -> list[str]:
    """The words with `[...]` groups left out, or given (`optional`), `a|b` as `a`."""
    text = " ".join(words)
    text = re.sub(r"\[([^\]]*)\]", r"\1" if optional else "", text)
    words = [w.split("|")[0] if "|" in w and "=" not in w else w for w in text.split()]
    return ["2" if w == "N" else w for w in words]  # N: a number


COMMANDS = readme_commands()


def test_the_readme_shows_the_commands_a_user_needs():
    shown = " ".join(COMMANDS)
    for needed in ("python3 sweep.py", "problems=all", "pkb ui", "pkb problems coverage",
                   "pkb problems list", "pkb problems check", "pkb eval", "--no-guard", "pkb models list",
                   "pkb prompt", "pkb report", "--wide", "pkb agent run", "pkb sweep", "--cfg job", "--dry-run"):
        assert needed in shown, needed
    assert len(COMMANDS) >= 20


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_parses(command):
    words = shlex.split(command)
    if words[0] == "pkb":
        for optional in (False, True):
            args = _pkb_parser().parse_args(_as_written(words[1:], optional))
            assert callable(args.handler)
        return
    overrides = [w for w in words[2:] if w not in ("--cfg", "job", "--dry-run")]  # sweep.py's own flags
    assert check_overrides(overrides) is None
    cfg = compose_config(overrides)
    assert cfg.attempts >= 1


def test_the_readme_counts_the_problems_there_are():
    """The README said 107 problems where `pkb problems list` shows 108."""
    from pkb_ray.config import compose_config
    from pkb_ray.driver.plan import at_world_size
    from pkb_ray.problems import load_problems

    problems = load_problems("builtin").problems
    text = README.read_text(encoding="utf-8")
    counts = re.search(r"all (\d+) problems \((\d+) run at world size 2\)", text)
    assert counts, "the README's count of problems=all"
    assert int(counts.group(1)) == len(problems)
    assert int(counts.group(2)) == len(at_world_size(problems, 2)[0])
    self_check = len(compose_config([]).problems.cpu_ids)
    assert f"CPU self-check instead (each\nproblem's reference as its own candidate, {self_check} problems" in text
