"""Initializers for capsule transforms."""

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.serialization import register


@register
class IdentityPlusUniform(keras.initializers.RandomUniform):
    """``I + U(-scale, scale)`` for a stack of square matrices (the inner-consensus code's ``IdentityRandomUniform``).

    The last two axes of ``shape`` are a square ``p x p`` matrix; the identity is broadcast over the
    leading axes (e.g. a ``(in_caps, out_caps, 4, 4)`` matrix-vote kernel) and every entry gets
    independent uniform noise. The inner-consensus paper initialises its matrix transforms with ``scale=0.1``
    (docs/reference/routers.md#vote-transform), so each vote starts as a slightly perturbed copy of the child pose.

    Registered as ``"keras_capsules>IdentityPlusUniform"``: pass it by name, by instance or as a
    config dict wherever Keras takes an initializer.

    Args:
        scale: half-width of the uniform noise (0.1).
        seed: optional seed (int or ``keras.random.SeedGenerator``) for reproducible draws.
    """

    def __init__(self, scale: float = 0.1, seed: int | keras.random.SeedGenerator | None = None) -> None:
        if not errors.is_number(scale) or scale < 0:
            errors.fail("IdentityPlusUniform", "scale", "a number >= 0", scale)
        self.scale = float(scale)
        super().__init__(minval=-self.scale, maxval=self.scale, seed=seed)

    def __call__(self, shape, dtype=None):
        shape = tuple(shape)
        if len(shape) < 2 or shape[-1] != shape[-2]:
            errors.fail(
                "IdentityPlusUniform", "shape", "a shape whose last two axes are equal (square matrices)", shape
            )
        noise = super().__call__(shape, dtype=dtype)
        return noise + ops.eye(shape[-1], dtype=noise.dtype)

    def get_config(self):
        config = super().get_config()
        config.pop("minval", None)
        config.pop("maxval", None)
        config["scale"] = self.scale
        return config
