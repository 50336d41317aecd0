"""Cosine as elementwise arithmetic, for functions that XLA compiles."""

import math

from keras import ops

# 2 pi split in two (Cody and Waite): n * _TWO_PI_HIGH is exact in float32 for |n| < 2**15 (9 significant bits).
_TWO_PI_HIGH = 6.28125
_TWO_PI_LOW = 2.0 * math.pi - _TWO_PI_HIGH
#: Taylor coefficients of cos(y) in y**2, highest first: the truncation error on [-pi, pi] is below 4e-9.
_COEFFICIENTS = [(-1) ** k / math.factorial(2 * k) for k in reversed(range(10))]


def polynomial_cos(x):
    """``cos(x)`` from multiplications and additions only: ``x`` reduced to ``[-pi, pi]``, then a polynomial.

    XLA's CPU backend calls a scalar library routine for ``cos`` but fuses and vectorises arithmetic,
    so inside a compiled function this is several times faster than ``ops.cos`` (the kernel router's
    spectral mixture makes ``Q * dim`` cosines per child and parent). Outside XLA it is slower: use it
    only in compiled code. Within ``5e-7`` of ``cos`` for ``|x| <= 1e4`` (float32); for larger ``|x|``
    the reduction loses the digits that float32 cannot hold anyway.

    Args:
        x: float tensor of any shape.

    Returns:
        ``cos(x)``, the same shape and dtype.
    """
    turns = ops.round(x * (1.0 / (2.0 * math.pi)))
    y = (x - turns * _TWO_PI_HIGH) - turns * _TWO_PI_LOW
    z = ops.square(y)
    result = _COEFFICIENTS[0]
    for coefficient in _COEFFICIENTS[1:]:
        result = result * z + coefficient
    return result
