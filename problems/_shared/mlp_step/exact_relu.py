# Grids for the inputs of the two-layer ReLU MLP training steps (ddp, fsdp, zero1, zero2) on
# which the first layer W1 x + b1 is exact in float32 in any summation order, so every
# implementation gets the same ReLU mask as the float64 truth.
#
# The mask is a step function of the pre-activation: one within float32 rounding of 0 falls
# on either side depending on the GEMM's order, and flipping it adds or drops one sample's
# whole term (~1/sqrt(batch)) in a W1 row's gradient. At the bench size (4M pre-activations
# per rank) 1-2 flip per seed and put the float32 step 78-452x its tolerance away from float64
# (CPU; 389x on H200). The rest of the step is smooth, where float32 rounding stays far inside.
#
# Exactness: x = kx/8 with |kx| <= 24, W1 = kw * 2^-e with |kw| <= 96 (e from d_in, >= 16
# levels per standard deviation, clipped at 3 sigma), b1 an odd multiple of half of 2^-(3+e).
# Every partial sum is then an integer count of 2^-(4+e) below 2^24 (checked), and float32
# holds it exactly; the odd bias keeps every pre-activation off 0. TF32 (11 significant bits)
# holds kx and kw exactly too.
import math

_X_STEP, _X_MAX = 2.0 ** -3, 3.0
_W_LEVELS, _W_SIGMAS = 16, 3.0


def _w1_exponent(d_in):
    return math.ceil(math.log2(_W_LEVELS * math.sqrt(d_in)))


def grid_x(x):
    """Inputs rounded to multiples of 1/8 and clipped to [-3, 3]."""
    lim = _X_MAX / _X_STEP
    return (x / _X_STEP).round().clamp(-lim, lim) * _X_STEP


def grid_w1(w1):
    """W1 [hidden, d_in] ~ N(0, 1/d_in) rounded to multiples of 2^-e, clipped at 3 sigma."""
    d_in = w1.shape[-1]
    step = 2.0 ** -_w1_exponent(d_in)
    lim = math.floor(_W_SIGMAS / math.sqrt(d_in) / step)
    # worst case over any order: d_in products of (_X_MAX/_X_STEP) * lim steps, in half-steps;
    # half of float32's exact integers is left for the bias
    if 2 * d_in * (_X_MAX / _X_STEP) * lim >= 2 ** 23:
        raise ValueError(f"d_in={d_in}: the first layer would not be exact in float32")
    return (w1 / step).round().clamp(-lim, lim) * step


def grid_b1(b1, d_in):
    """b1 on odd multiples of half a product step: W1 x + b1 is never exactly 0."""
    unit = _X_STEP * 2.0 ** -_w1_exponent(d_in)
    return ((b1 / unit).floor() + 0.5) * unit
