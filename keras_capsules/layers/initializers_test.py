import keras
import numpy as np
import pytest

from keras_capsules.layers import FcCaps, IdentityPlusUniform


def test_identity_plus_bounded_uniform_noise():
    values = keras.ops.convert_to_numpy(IdentityPlusUniform(0.1, seed=3)((50, 4, 4, 4)))
    noise = values - np.eye(4)
    assert values.shape == (50, 4, 4, 4)
    assert np.all(np.abs(noise) <= 0.1 + 1e-7)
    assert noise.std() > 0.04  # U(-0.1, 0.1) has std 0.0577
    np.testing.assert_allclose(values.mean(axis=(0, 1)), np.eye(4), atol=0.02)


def test_seeded_draws_are_reproducible_and_config_round_trips():
    init = IdentityPlusUniform(scale=0.05, seed=7)
    config = keras.initializers.serialize(init)
    revived = keras.initializers.get(config)
    assert isinstance(revived, IdentityPlusUniform) and revived.scale == 0.05
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(init((3, 2, 2))), keras.ops.convert_to_numpy(revived((3, 2, 2)))
    )
    assert keras.initializers.get("keras_capsules>IdentityPlusUniform").scale == 0.1


def test_used_by_matrix_capsules_and_saved_in_config():
    layer = FcCaps(
        3, transform="matrix", matrix_side="left", normalize_weights=True, kernel_initializer=IdentityPlusUniform()
    )
    layer(np.zeros((1, 5, 16), "float32"))
    kernel = keras.ops.convert_to_numpy(layer.vote_transform.kernel)
    assert np.all(np.abs(kernel - np.eye(4)) <= 0.1 + 1e-7)
    revived = FcCaps.from_config(layer.get_config())
    assert isinstance(revived.vote_transform.kernel_initializer, IdentityPlusUniform)


@pytest.mark.parametrize("shape", [(4,), (3, 4, 5)])
def test_rejects_non_square_shapes(shape):
    with pytest.raises(ValueError, match="IdentityPlusUniform.*shape"):
        IdentityPlusUniform()(shape)


def test_rejects_negative_scale():
    with pytest.raises(ValueError, match="IdentityPlusUniform.*scale"):
        IdentityPlusUniform(-0.1)
