"""The capsule-dimension perturbation grid against a NumPy forward pass of the decoder on hand-built masked poses."""

import os

import keras
import numpy as np
import pytest

from keras_capsules import applications
from keras_capsules.interpret import dimension_perturbations, plot_dimension_perturbations
from keras_capsules.interpret.perturbation import DEFAULT_OFFSETS


@pytest.fixture(scope="module")
def model():
    return applications.EffCapsNet(reconstruction=True)


def _numpy_decoder(decoder, vectors):
    """relu(relu(x W0 + b0) W1 + b1) -> sigmoid(. W2 + b2): the dense decoder written out in NumPy."""
    weights = [keras.ops.convert_to_numpy(w) for w in decoder.weights]
    h = vectors
    for i in range(0, len(weights) - 2, 2):
        h = np.maximum(h @ weights[i] + weights[i + 1], 0.0)
    return 1.0 / (1.0 + np.exp(-(h @ weights[-2] + weights[-1])))


def test_grid_matches_hand_built_perturbations(model):
    image = np.random.default_rng(0).uniform(size=(28, 28, 1)).astype("float32")
    grid, capsule = dimension_perturbations(model, image)
    assert grid.shape == (16, len(DEFAULT_OFFSETS), 28, 28, 1)
    probe = keras.Model(
        model.inputs,
        [keras.tree.flatten(model.outputs)[0], keras.tree.flatten(model.get_layer("class_caps").output)[0]],
    )
    scores, poses = (keras.ops.convert_to_numpy(t)[0] for t in probe(image[None]))
    assert capsule == int(np.argmax(scores))
    np.testing.assert_allclose(DEFAULT_OFFSETS, np.linspace(-0.25, 0.25, 11), atol=1e-9)
    for d in (0, 7, 15):
        for k, offset in enumerate(DEFAULT_OFFSETS):
            vector = np.zeros((10, 16), "float32")
            vector[capsule] = poses[capsule]
            vector[capsule, d] += offset
            expected = _numpy_decoder(model.decoder, vector.reshape(1, -1)).reshape(28, 28, 1)
            np.testing.assert_allclose(grid[d, k], expected, rtol=1e-4, atol=1e-5)
    # The zero offset reproduces the plain reconstruction of the winning capsule in every row.
    middle = list(DEFAULT_OFFSETS).index(0.0)
    np.testing.assert_allclose(grid[:, middle], np.broadcast_to(grid[0, middle], grid[:, middle].shape), atol=1e-6)


def test_chosen_capsule_and_errors(model, tmp_path):
    image = np.zeros((28, 28, 1), "float32")
    grid, capsule = dimension_perturbations(model, image, offsets=(-0.1, 0.1), capsule=3)
    assert capsule == 3 and grid.shape == (16, 2, 28, 28, 1)
    with pytest.raises(ValueError, match=r"argument `capsule` expected a class index in \[0, 10\), received 10"):
        dimension_perturbations(model, image, capsule=10)
    with pytest.raises(
        ValueError,
        match=r"argument `image` expected one image of shape \(28, 28, 1\), received 'shape \(1, 28, 28, 1\)'",
    ):
        dimension_perturbations(model, image[None])
    with pytest.raises(ValueError, match=r"argument `model` expected a model with a reconstruction decoder"):
        dimension_perturbations(applications.EffCapsNet(), image)
    path = plot_dimension_perturbations(grid, str(tmp_path / "grid.png"), offsets=(-0.1, 0.1), title="digit 3")
    assert os.path.getsize(path) > 1000 and open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match=r"argument `grid` expected an array \(capsule_dim, 11, H, W, C\)"):
        plot_dimension_perturbations(grid, str(tmp_path / "bad.png"))
