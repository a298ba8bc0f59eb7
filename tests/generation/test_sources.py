"""Candidate sources: each declares its own properties, and no module decides behaviour by
comparing a model's name or provider to a literal (issue 14)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from pkb_ray.config.schema import ModelConfig
from pkb_ray.generation import sources
from pkb_ray.generation.client import litellm_model_name
from pkb_ray.generation.models import (
    ModelConfigError,
    api_model_names,
    check_model_config,
    load_model_config,
)
from pkb_ray.generation.sources import CandidateSource, register_source, source_for
from .conftest import toy_problem

REPO = Path(__file__).resolve().parents[2]


def test_each_shipped_source_declares_its_properties():
    ref, exp = source_for(load_model_config("reference")), source_for(load_model_config("expert"))
    assert (ref.calls_api, ref.guard, ref.needs_api_key) == (False, False, False)  # collectives
    assert (exp.calls_api, exp.guard, exp.needs_api_key) == (False, True, False)
    assert exp.runs_on(load_model_config("expert")) == ["cuda"]
    # expert's devices come from the source even where a config would allow cpu
    assert exp.runs_on(ModelConfig(name="e2", provider="expert")) == ["cuda"]
    with_expert, without = toy_problem("a"), toy_problem("b", expert=False)
    assert exp.has_candidate(with_expert) and not exp.has_candidate(without)
    assert exp.serve(with_expert) == with_expert.expert_source and exp.serve(without) is None
    assert ref.has_candidate(without) and ref.serve(without) == without.reference_source
    gpt = source_for(load_model_config("gpt55"))
    assert gpt.calls_api and gpt.guard and gpt.needs_api_key and not gpt.needs_api_base
    assert gpt.serve(with_expert) is None
    oc = source_for("openai_compatible")
    assert oc.calls_api and oc.needs_api_base


def test_api_base_without_a_provider_prefix_routes_through_that_provider():
    cfg = ModelConfig(name="x", provider="together_ai", model_id="m", api_base="http://h/v1")
    assert litellm_model_name(cfg) == "together_ai/m"
    cfg = ModelConfig(name="x", provider="openai_compatible", model_id="Qwen/Qwen3-8B",
                      api_base="http://h/v1")
    assert litellm_model_name(cfg) == "openai/Qwen/Qwen3-8B"
    assert litellm_model_name(load_model_config("opus47")) == "anthropic/claude-opus-4-7"


def test_the_retired_pseudo_provider_fails_naming_file_and_replacement(tmp_path):
    (tmp_path / "old.yaml").write_text("name: old\nprovider: pseudo\n")
    with pytest.raises(ModelConfigError) as e:
        load_model_config("old", conf_dir=tmp_path)
    assert "old.yaml" in str(e.value) and "provider: reference" in str(e.value)
    assert "provider: expert" in check_model_config(ModelConfig(name="old", provider="pseudo"))
    assert "no provider set" in check_model_config(ModelConfig(name="bare"))


def test_a_plugin_source_registers_under_its_provider_on_first_lookup(tmp_path, monkeypatch):
    # how a new source (issue 17's tool agent, say) plugs in: a module named in PLUGINS
    # that registers a CandidateSource subclass when imported
    import sys

    monkeypatch.setattr(sources, "_REGISTRY", dict(sources._REGISTRY))
    monkeypatch.setattr(sources, "PLUGINS", {"canned": "tests.generation.canned_source"})
    monkeypatch.delitem(sys.modules, "tests.generation.canned_source", raising=False)
    assert "tests.generation.canned_source" not in sys.modules
    assert source_for("openai") is sources.LITELLM  # other lookups never import the plugin
    assert "tests.generation.canned_source" not in sys.modules
    (tmp_path / "canned.yaml").write_text("name: canned\nprovider: canned\n")
    (tmp_path / "gpt.yaml").write_text("name: gpt\nprovider: openai\nmodel_id: openai/gpt-5\n")
    assert source_for(load_model_config("canned", conf_dir=tmp_path)).serve(None).startswith("def")
    assert api_model_names(tmp_path) == ["gpt"]  # models=all: only sources that call an API
    with pytest.raises(ValueError, match="registered already"):
        register_source(CandidateSource("canned"))
    monkeypatch.setattr(sources, "PLUGINS", {"broken": "json"})  # imports, registers nothing
    with pytest.raises(sources.UnknownSourceError, match="registered no source"):
        source_for("broken")


# -- no name checks -------------------------------------------------------------------------
def _model_literals() -> list[str]:
    """Every model name and provider in conf/model, and the retired `pseudo`."""
    out = {"pseudo"}
    for path in (REPO / "conf" / "model").glob("*.yaml"):
        out |= {path.stem, str(yaml.safe_load(path.read_text())["provider"])}
    return sorted(out, key=lambda s: (-len(s), s))


def _name_check_pattern(literals: list[str]) -> re.Pattern:
    lit = "[\"'](?:" + "|".join(map(re.escape, literals)) + ")[\"']"
    return re.compile(
        rf"(?:==|!=)\s*[(\[{{]?\s*{lit}"  # x == "expert", models == ["expert"]
        rf"|{lit}\s*(?:==|!=)"  # "expert" == x
        rf"|\bin\s*[(\[{{][^)\]}}]*{lit}"  # x in ("reference", "expert")
        rf"|\bcase\s+{lit}"  # match x: case "reference":
    )


PATTERN = _name_check_pattern(_model_literals())


@pytest.mark.parametrize("line", [
    'is_reference = state.key.model == "reference"',
    "if c.model != 'expert' or has_expert[c.problem]:",
    'if model.name in ("reference", "expert"):',
    'if cfg.name == "openai_compatible" and not cfg.api_base:',
    'elif models == ["expert"]:',
    'if "pseudo" == s["provider"]:',
    'if cfg.api_base and cfg.provider == "openai":',
    '    case "reference":',
])
def test_the_pattern_catches_name_checks(line):
    assert PATTERN.search(line), line


@pytest.mark.parametrize("line", [
    'if path.name == "expert.py":',
    'category = "expert"',
    'CATEGORIES = ("collective", "expert")',
    'return problem.reference_source',
    'if kind == "reference_ms":',
    'key = f"{cfg.provider}/{cfg.model_id}"',
])
def test_the_pattern_passes_what_is_not_a_name_check(line):
    assert not PATTERN.search(line), line


def test_no_module_decides_behaviour_by_a_model_name():
    hits = []
    for path in sorted((REPO / "pkb_ray").rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if PATTERN.search(line):
                hits.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not hits, ("a model's name or provider is compared to a literal; declare the "
                      "property on its CandidateSource (pkb_ray/generation/sources.py):\n"
                      + "\n".join(hits))
