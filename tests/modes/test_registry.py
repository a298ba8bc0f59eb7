"""The modes registry: every `mode=` value is one registered strategy, and nothing outside
pkb_ray/modes asks which mode it is in."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pkb_ray.config.schema import RootConfig
from pkb_ray.modes import MODES, CellState, Turn, UnknownMode, mode_config_errors, mode_of, recorded_mode
from pkb_ray.records import CellKey, CellStatus, EvalResult, Generation

PKG = Path(__file__).resolve().parents[2] / "pkb_ray"

MODE_BRANCH = re.compile(r"""mode(\.name)?\s*(==|!=|\bin\b)\s*[("'\[]""")
"""A comparison of a mode's name with a literal: `cfg.mode.name == "agent"`,
`key.mode != 'tools'`, `mode.name in ("zeroshot", ...)`."""


def test_nothing_outside_the_modes_branches_on_a_mode_name():
    hits = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel.startswith(("modes/", "engine/")):
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if MODE_BRANCH.search(line) and "job.mode" not in line:  # a rank job's run/profile
                hits.append(f"pkb_ray/{rel}:{n}: {line.strip()}")
    assert not hits, "ask the mode (pkb_ray/modes) instead:\n" + "\n".join(hits)


def test_the_branch_pattern_finds_the_usual_spellings():
    for line in ('if cfg.mode.name == "agent":', "x = a if key.mode != 'tools' else b",
                 'if cfg.mode.name in ("zeroshot", "tools")'):
        assert MODE_BRANCH.search(line), line
    assert not MODE_BRANCH.search("mode = mode_of(cfg.mode.name)")


def test_every_mode_is_registered_once_the_default_first():
    names = [m.name for m in MODES]
    assert names == ["zeroshot", "agent", "tools"] and len(set(names)) == len(names)
    assert RootConfig().mode.name == names[0] and CellKey("m", "p", 1).mode == names[0]
    assert [m.name for m in MODES if m.baseline] == ["zeroshot"]
    with pytest.raises(UnknownMode, match="is not one of zeroshot, agent, tools"):
        mode_of("fewshot")
    assert recorded_mode("fewshot").title == "fewshot" and recorded_mode("agent") is mode_of("agent")


def test_names_carry_every_mode_but_the_default():
    assert mode_of("zeroshot").label("m/p/a1", "{base}/{mode}") == "m/p/a1"
    assert mode_of("tools").label("m/p/a1", "{base}/{mode}") == "m/p/a1/tools"
    assert recorded_mode("fewshot").label("m", "{base} ({mode})") == "m (fewshot)"


def test_turns_apply_to_the_modes_that_take_them():
    cfg = RootConfig()
    cfg.turns = 3
    assert mode_config_errors(cfg) == ["turns=3 applies to mode=agent only"]
    cfg.mode.name = "agent"
    assert mode_config_errors(cfg) == []
    cfg.turns = 0
    assert mode_config_errors(cfg) == ["turns=0 must be an integer >= 1"]
    cfg.turns, cfg.mode.name, cfg.mode.turns = None, "tools", 2
    assert mode_config_errors(cfg) == ["mode.turns applies to mode=agent only (tools makes one episode per "
                                       "cell: see mode.tools.limits)"]


def test_identity_settings_are_each_modes_own():
    cfg = RootConfig()
    assert mode_of("zeroshot").identity_settings(cfg) == {}
    assert mode_of("agent").identity_settings(cfg) == {"mode.turns": "1", "mode.target_speedup": "1.0"}
    tools = mode_of("tools").identity_settings(cfg)
    assert "mode.tool_protocol" in tools and "mode.tools.limits.usd" in tools
    assert not any(k.startswith("mode.tools.tool_models") for k in tools)  # a capability note


def test_a_multi_turn_cell_is_its_best_turn_at_every_turns_cost():
    def turn(correct: bool, speedup: float | None, cost: float) -> Turn:
        return Turn(Generation(model="m", problem="p", attempt=1, cost_usd=cost),
                    evaluation=EvalResult(compiled=True, correct=correct, speedup=speedup))

    state = CellState(CellKey("m", "p", 1, "agent"), [turn(False, None, 0.1), turn(True, 1.5, 0.2),
                                                       turn(True, 1.2, 0.3)])
    result = mode_of("agent").finalize(state)
    assert result.status == CellStatus.CORRECT and result.speedup == 1.5
    assert result.generation.cost_usd == pytest.approx(0.6) and len(result.turns) == 3
