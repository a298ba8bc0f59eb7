"""The reference check's allowance for summation order: two calls of a reference may differ in
floating outputs by a tenth of the problem's tolerance (GPU atomics round differently on each
call), and by nothing else."""

from __future__ import annotations

import torch

from pkb_ray.selfcheck.check import ORDER_NOISE_SHARE, _order_noise


def test_rounding_within_a_tenth_of_the_tolerance_is_order_noise():
    base = torch.linspace(-3, 3, 1000, dtype=torch.float32)
    again = base.clone()
    again[::7] += 1e-7 * (1 + base[::7].abs())  # last-bit differences, as a reordered sum leaves
    noise = _order_noise({"out": base, "n": 3}, {"out": again, "n": 3}, atol=1e-5, rtol=1e-5)
    assert noise is not None and 0 < noise <= ORDER_NOISE_SHARE * (1e-5 + 1e-5 * 3)


def test_differences_that_state_or_randomness_make_are_not():
    base = torch.randn(256, generator=torch.Generator().manual_seed(1))
    drifted = base + 1e-3  # a call that saw state left by the one before: far past a tenth of atol
    assert _order_noise([base], [drifted], atol=1e-3, rtol=1e-3) is None
    # any difference in an exact problem (data movement: atol = rtol = 0)
    nudged = base.clone()
    nudged[0] = torch.nextafter(nudged[0], torch.tensor(float("inf")))
    assert _order_noise([base], [nudged], atol=0.0, rtol=0.0) is None
    # integers, shapes and non-tensor leaves must repeat exactly
    assert _order_noise([torch.arange(4)], [torch.arange(4) + 1], atol=1.0, rtol=1.0) is None
    assert _order_noise([base, 1], [base, 2], atol=1.0, rtol=1.0) is None
    assert _order_noise([base], [base[:-1]], atol=1.0, rtol=1.0) is None
    # a NaN where the other call has a number is not rounding
    holed = base.clone()
    holed[3] = float("nan")
    assert _order_noise([base], [holed], atol=1.0, rtol=1.0) is None
    assert _order_noise([holed], [holed.clone()], atol=1e-6, rtol=0.0) == 0.0
