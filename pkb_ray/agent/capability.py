"""Refuse, at start-up, a model that cannot call tools: before any problem, sandbox or request."""

from __future__ import annotations

from pkb_ray.config.schema import ModelConfig


class ToolsUnsupported(ValueError):
    """This model cannot run the tool agent; the message says why and what to change."""


def require_tool_support(cfg: ModelConfig, declared: list[str], setting: str = "agent.tool_models") -> None:
    """litellm's own table decides (`supports_function_calling`); `declared` (the setting
    named `setting`: agent.tool_models, or a sweep's mode.tools.tool_models) names models it
    cannot know about, such as an openai_compatible endpoint."""
    from pkb_ray.generation.client import litellm_model_name, litellm_module
    from pkb_ray.generation.models import check_model_config, is_pseudo

    if is_pseudo(cfg):
        raise ToolsUnsupported(f"model {cfg.name!r} is a pseudo-model (no API): the tool agent needs a "
                               "model that calls tools")
    bad = check_model_config(cfg)
    if bad:
        raise ToolsUnsupported(bad)
    if cfg.name in declared:
        return
    routed = litellm_model_name(cfg)
    try:
        ok = bool(litellm_module().supports_function_calling(model=routed))
    except Exception:  # noqa: BLE001 - litellm raises for models it has never heard of
        ok = False
    if not ok:
        raise ToolsUnsupported(
            f"model {cfg.name!r} ({routed}): litellm does not list function calling for it, so the tool "
            f"agent refuses it. If the endpoint does call tools (e.g. vLLM with --enable-auto-tool-choice), "
            f"declare it with {setting}=[{cfg.name}]")
