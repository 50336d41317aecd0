"""Squash non-linearities: Sabour et al. (2017) and Efficient-CapsNet (Mazzia et al. 2021).

Both take poses ``(..., capsule_dim)`` and return a tensor of the same shape with length in [0, 1).
Float16/bfloat16 inputs are squashed in float32 and cast back. They are computed so that a zero vector gives a zero output with a finite gradient, and a very long
vector gives a finite output of length ~1 (``q/(1+q)`` is written ``1 - 1/(1+q)`` so ``q = inf`` cannot make NaN, and the direction
``s/|s|`` is taken from ``s/m``, ``m = max(max|s|, 1)`` (:func:`~keras_capsules.ops.norms.rescaled`), so ``|s|^2`` cannot
overflow: a vector of norm 1e20 or 1e38 keeps its direction). For ``|s| <= 1`` entries the result is bit-identical to the textbook form.
"""

from keras import ops

from keras_capsules.ops.norms import DEFAULT_EPSILON, in_float32, rescaled, sqrt_safe_grad

SABOUR_FORMS = ("sabour", "escvm", "official")


@in_float32
def squash(s, axis=-1, epsilon=DEFAULT_EPSILON, form="sabour"):
    """Sabour squash ``v = |s|^2 / (1 + |s|^2) * s / |s|``.

    Args:
        s: poses ``(..., capsule_dim)``; a matrix pose stored flat is squashed over its 16 entries.
        axis: the atom axis.
        epsilon: the numerical guard (docs/reference/routers.md#squash-and-capsule-length); ignored by ``form="official"``.
        form: which reference's numerical form to use (docs/reference/routers.md#squash-and-capsule-length):
            ``"sabour"`` (default; XifengGuo, REM with ``epsilon=1e-6``): ``s * q/(1+q) / sqrt(q + eps)``;
            ``"escvm"`` (EscVM; FMRouting with ``epsilon=1e-10``): ``s * q/(1+q) / (sqrt(q) + eps)``;
            ``"official"``: exact, no epsilon (NaN at ``s = 0``, as in the official TF1 code).
            ``q = sum(s**2)``. The first two have finite values and gradients at ``s = 0``.

    Returns:
        Squashed poses, same shape as ``s``.
    """
    if form not in SABOUR_FORMS:
        raise ValueError(f"squash: argument `form` expected one of {SABOUR_FORMS}, received {form!r}.")
    # With u = s/m and q_u = |u|^2: |s|^2 = m^2 q_u, s/sqrt(|s|^2 + eps) = u/sqrt(q_u + eps/m^2), and
    # s/(|s| + eps) = u/(|u| + eps/m): the same functions, with no overflow.
    unit, m = rescaled(s, axis)
    q_unit = ops.sum(ops.square(unit), axis=axis, keepdims=True)
    q = q_unit * ops.square(m)
    scale = 1.0 - 1.0 / (1.0 + q)
    if form == "sabour":
        return unit * scale / ops.sqrt(q_unit + epsilon / ops.square(m))
    if form == "official":
        return unit * scale / ops.sqrt(q_unit)
    return unit * scale / (sqrt_safe_grad(q_unit) + epsilon / m)


@in_float32
def squash_efficient(s, axis=-1, epsilon=DEFAULT_EPSILON):
    """Efficient-CapsNet squash ``v = (1 - exp(-|s|)) * s / |s|``.

    Computed as EscVM does, ``(1 - 1/(exp(|s|) + eps)) * s / (|s| + eps)``, but with ``exp(-|s|)``
    in place of ``1/exp(|s|)`` so a long vector cannot overflow ``exp``. Use ``epsilon=1e-20`` for
    bit-parity with EscVM (in float32 only: 1e-20 underflows in float16).

    Args:
        s: poses ``(..., capsule_dim)``.

    Returns:
        Squashed poses, same shape as ``s``.
    """
    unit, m = rescaled(s, axis)
    unit_norm = sqrt_safe_grad(ops.sum(ops.square(unit), axis=axis, keepdims=True))
    return (1.0 - ops.exp(-unit_norm * m)) * unit / (unit_norm + epsilon / m)


SQUASHES = {"squash": squash, "squash_efficient": squash_efficient}


def get_squash(name):
    """Returns the squash function registered under ``name`` (``"squash"`` or ``"squash_efficient"``)."""
    if name not in SQUASHES:
        raise ValueError(f"get_squash: argument `name` expected one of {sorted(SQUASHES)}, received {name!r}.")
    return SQUASHES[name]
