"""The prompt's content and hash, and candidate extraction."""

from __future__ import annotations

from pkb_ray.generation.extract import extract_candidate
from pkb_ray.generation.prompt import PROMPT_VERSION, build_prompt, messages_hash

from .conftest import TOY_REFERENCE, toy_problem


def test_prompt_holds_what_a_model_needs():
    p = build_prompt(toy_problem())
    user = p.messages[-1]["content"]
    assert [m["role"] for m in p.messages] == ["system", "user"]
    assert TOY_REFERENCE.strip() in user
    for needle in ("symm_mem.empty", "rendezvous", "buffer_ptrs_dev", "signal_pad_ptrs",
                   "barrier(channel", "get_buffer", "put_signal", "wait_signal", "world_size",
                   "multicast", "all_reduce", "H200", "atol=1e-05", "```python",
                   "def solution("):
        assert needle in user, needle
    assert p.version == PROMPT_VERSION and p.hash == messages_hash(p.messages)
    assert len(p.hash) == 64 and p.text.startswith("[system]")


def test_prompt_hash_is_stable_and_follows_content():
    a, b = build_prompt(toy_problem()), build_prompt(toy_problem())
    assert a.hash == b.hash
    measured = build_prompt(toy_problem(), hardware="2 x H200, measured 370 GB/s peer read")
    assert measured.hash != a.hash and "measured 370 GB/s" in measured.messages[-1]["content"]
    assert build_prompt(toy_problem(pid="other")).hash != a.hash


def test_extract_takes_first_python_block_defining_solution():
    text = ("Plan:\n```python\nimport torch\nx = 1\n```\n"
            "```cuda\n__global__ void k() {}\n```\n"
            "```python\nimport torch\n\ndef solution(x):\n    return x\n```\n"
            "```python\ndef solution(x):\n    return 2 * x\n```\n")
    assert extract_candidate(text) == "import torch\n\ndef solution(x):\n    return x\n"


def test_extract_fallbacks_and_failures():
    assert extract_candidate("```py\ndef solution(a, b):\n    pass\n```") is not None
    assert extract_candidate("```\ndef solution(a):\n    pass\n```") is not None  # untagged
    assert extract_candidate("no code here") is None
    assert extract_candidate(None) is None
    assert extract_candidate("```python\ndef helper():\n    pass\n```") is None
    # cut off by max_tokens: no closing fence, not taken
    assert extract_candidate("```python\ndef solution(x):\n    return") is None
    # a tagged block wins over an earlier untagged one
    t = "```\ndef solution(x):\n    return 0\n```\n```python\ndef solution(x):\n    return 1\n```"
    assert "return 1" in extract_candidate(t)


def test_prompt_v3_states_this_evaluation():
    from pkb_ray.generation.prompt import SIGNAL_PAD_BYTES, EvalContext
    from pkb_ray.problems import load_problem

    problem = load_problem("builtin", "allreduce")
    user = build_prompt(problem, context=EvalContext(world_size=4, size="bench",
                                                     load_timeout_s=90)).messages[-1]["content"]
    assert "World size 4, on one node: 4 processes, one per GPU" in user
    assert "`x`: bfloat16[8192, 4096] (every rank)" in user  # real shapes, not size parameters
    assert "atol=0.125, rtol=0.016" in user
    # 2 (w-1)/w x 64 MiB over NVLink at 381 GB/s: 264 us at world size 4.
    assert "101 MB over NVLink" in user and "at least 264 us per call" in user
    assert "within 90 s" in user and f"{SIGNAL_PAD_BYTES} bytes per rank" in user
    assert "never in symmetric memory" in user
    assert "Do not modify inputs" in user and "Return new tensors" in user
    assert "uses none of your symmetric memory, signal pads or barrier channels" in user
    assert "can live in symmetric memory" not in user and "2 or 8 per node" not in user
    small = build_prompt(problem, context=EvalContext(world_size=2, device="cpu", size="small"))
    assert "float32[64, 128]" in small.messages[-1]["content"]
    assert small.hash != build_prompt(problem).hash  # the evaluation is part of the hash


def test_data_dependent_shapes_are_stated_as_varying():
    from pkb_ray.generation.shapes import describe_inputs
    from pkb_ray.problems import load_problem

    text = describe_inputs(load_problem("builtin", "moe_combine"), 2, "small")
    assert "varies per call" in text and "rank 1:" in text
