"""Cosine as elementwise arithmetic, for functions that XLA compiles."""

import math

from keras import ops

# 2 pi split in two (Cody and Waite): n * _TWO_PI_HIGH is exact in float32 for |n| < 2**15 (9 significant bits).
_TWO_PI_HIGH = 6.28125
_TWO_PI_LOW = 2.0 * math.pi - _TWO_PI_HIGH
#: Taylor coefficients of cos(y) in y**2, highest first: the truncation error on [-pi, pi] is below 4e-9.
_COEFFICIENTS = [(-1) ** k / math.factorial(2 * k) for k in reversed(range(10))]


def _reduced_polynomial_cos(x):
    turns = ops.round(x * (1.0 / (2.0 * math.pi)))
    # Clipped: beyond |x| ~ 1e7 float32 loses the reduction's digits, and an unclipped y would overflow the polynomial.
    y = ops.clip((x - turns * _TWO_PI_HIGH) - turns * _TWO_PI_LOW, -math.pi, math.pi)
    z = ops.square(y)
    result = _COEFFICIENTS[0]
    for coefficient in _COEFFICIENTS[1:]:
        result = result * z + coefficient
    return result


def polynomial_cos(x):
    """``cos(x)`` from multiplications and additions only: ``x`` reduced to ``[-pi, pi]``, then a polynomial.

    XLA's CPU backend calls a scalar library routine for ``cos`` but fuses and vectorises arithmetic,
    so inside a compiled function this is several times faster than ``ops.cos`` (the kernel router's
    spectral mixture makes ``Q * dim`` cosines per child and parent). Outside XLA it is slower: use it
    only in compiled code. Within ``5e-7`` of ``cos`` for ``|x| <= 1e4`` (float32); for larger ``|x|``
    the reduction loses the digits that float32 cannot hold anyway, and the result stays within
    ``[-1, 1]`` (to ``1e-8``) for every finite ``x``.

    The gradient is ``-sin(x)``, the same polynomial a quarter turn on (a custom gradient: one
    polynomial in the backward pass instead of the derivative of each of its ten steps).

    Args:
        x: float tensor of any shape.

    Returns:
        ``cos(x)``, the same shape and dtype.
    """

    @ops.custom_gradient
    def cosine(value):
        def grad(*args, upstream=None):
            if upstream is None:
                (upstream,) = args
            return -upstream * polynomial_sin(value)

        return _reduced_polynomial_cos(value), grad

    return cosine(x)


def polynomial_sin(x):
    """``sin(x) = cos(x - pi / 2)`` by :func:`polynomial_cos`'s polynomial (its gradient: that of each step)."""
    return _reduced_polynomial_cos(x - 0.5 * math.pi)
