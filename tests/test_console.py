"""Output fitted to a terminal: wrapping and columns left out by priority."""

from pkb_ray.console import fit_columns, wrap


def test_wrap_breaks_at_spaces_and_keeps_words_whole():
    path = "sweeps/" + "x" * 120 + "/journal.jsonl"
    text = "pkb: sweep 'a': 12 cells to run on cpu; journal " + path
    lines = wrap(text, width=60).splitlines()
    assert lines[0].startswith("pkb: sweep") and len(lines[0]) <= 60
    assert lines[-1].strip() == path  # a word longer than the width is never cut
    assert all(line.startswith("  ") for line in lines[1:])


def test_columns_are_left_out_least_useful_first_and_never_skipping_a_rank():
    rows = [{"model": "reference", "pass@1": "1.000", "cost $": "0.00", "sig_fast_2@k": "0.000"}]
    cols = list(rows[0])
    kept, dropped = fit_columns(cols, rows, ("model", "pass@1", "sig_fast_2@k", "cost $"), width=30)
    assert kept == ["model", "pass@1"] and dropped == ["cost $", "sig_fast_2@k"]
    kept, dropped = fit_columns(cols, rows, ("model",), width=500)
    assert kept == cols and dropped == []
    # The first column stays even when it alone is too wide.
    assert fit_columns(cols, rows, (), width=5)[0] == ["model"]


def test_readable_rounds_and_leaves_out_what_is_empty():
    from pkb_ray.console import readable, wrap_cell

    assert readable(0.62361234567891234) == "0.6236" and readable(float("inf")) == "inf"
    assert readable({"a": 1.23456, "b": None, "c": {"d": [1.0, 2.5]}}) == "a=1.235, c={d=[1, 2.5]}"
    # A model id breaks after a `/`, a title after a space; a word longer than the width stays whole.
    assert wrap_cell("together_ai/meta-llama/Llama-3.3-70B", 24) == "together_ai/meta-llama/\nLlama-3.3-70B"
    assert wrap_cell("All-gather of one tensor", 12) == "All-gather\nof one\ntensor"
