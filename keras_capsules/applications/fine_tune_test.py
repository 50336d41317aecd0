"""fine_tune_model: the preset's backbone copied (or converted for other channels), a fresh top for the new classes."""

import keras
import numpy as np
import pytest

from keras_capsules import applications, presets
from keras_capsules.applications.fine_tune import GRAY_TO_RGB, RGB_TO_GRAY, _adapt_first_kernel, fine_tune_model


def _preset_arrays(key):
    with np.load(presets.locate(presets.get(*key))) as archive:
        return {name: archive[name] for name in archive.files}


@pytest.fixture(scope="module")
def rgb_tuned():
    return fine_tune_model("EffCapsNet", "mnist", input_shape=(40, 40, 3), classes=3, reconstruction=False)


def test_backbone_weights_are_the_preset_file_and_the_top_is_new(rgb_tuned):
    stored = _preset_arrays(("EffCapsNet", "mnist"))
    assert rgb_tuned.backbone == ("conv1", "bn1", "conv2", "bn2", "conv3", "bn3", "conv4", "bn4", "primary_caps")
    assert rgb_tuned.top == ("class_caps",)  # reconstruction=False: no decoder
    for name in rgb_tuned.backbone[1:]:
        for index, variable in enumerate(rgb_tuned.model.get_layer(name).weights):
            np.testing.assert_array_equal(np.asarray(variable), stored[f"{name}/{index}"].astype(np.float32))
    kernel = np.asarray(rgb_tuned.model.get_layer("conv1").weights[0])
    assert kernel.shape == (5, 5, 3, 32)
    np.testing.assert_allclose(kernel, np.repeat(stored["conv1/0"] / 3.0, 3, axis=2), rtol=1e-6)
    assert rgb_tuned.adapted == {"conv1": GRAY_TO_RGB}
    assert rgb_tuned.model.output.shape[-1] == 3 and rgb_tuned.record()["preset"] == "EffCapsNet/mnist"


def test_gray_stem_on_rgb_answers_like_the_gray_network_for_equal_channels(rgb_tuned):
    """An RGB image with R = G = B gives the gray preset's first-convolution response to the gray image (before the nonlinearity)."""
    stored = _preset_arrays(("EffCapsNet", "mnist"))
    gray = np.random.default_rng(0).random((1, 40, 40, 1)).astype(np.float32)
    kernel_rgb = rgb_tuned.model.get_layer("conv1").weights[0]
    response = np.asarray(keras.ops.conv(np.repeat(gray, 3, axis=-1), kernel_rgb, padding="valid"))
    # Reference: a direct NumPy valid convolution of the gray image with the preset's gray kernel at a few positions.
    kernel = stored["conv1/0"][:, :, 0, :]  # (5, 5, 32)
    for row, col in [(0, 0), (7, 13), (35, 35)]:
        expected = np.einsum("ij,ijf->f", gray[0, row : row + 5, col : col + 5, 0], kernel)
        np.testing.assert_allclose(response[0, row, col], expected, rtol=1e-4, atol=1e-5)


def test_kernel_conversion_rules():
    gray = np.arange(2 * 2 * 1 * 4, dtype=np.float32).reshape(2, 2, 1, 4)
    rgb, how = _adapt_first_kernel(gray, (2, 2, 3, 4))
    assert how == GRAY_TO_RGB and np.allclose(rgb.sum(axis=2), gray[:, :, 0])
    back, how = _adapt_first_kernel(rgb, (2, 2, 1, 4))
    assert how == RGB_TO_GRAY and np.allclose(back, gray)
    assert _adapt_first_kernel(gray, (2, 2, 2, 4)) is None  # two channels: no rule
    assert _adapt_first_kernel(gray, (3, 3, 3, 4)) is None  # another kernel size is another architecture


def test_refusals_name_the_problem():
    with pytest.raises(
        ValueError, match=r"weight 0 of backbone layer 'conv1' has shape \(5, 5, 1, 32\).*\(5, 5, 2, 32\)"
    ):
        fine_tune_model("EffCapsNet", "mnist", input_shape=(28, 28, 2), classes=3)
    with pytest.raises(ValueError, match=r"argument `weights` expected a preset of EffCapsNet \(EffCapsNet/"):
        fine_tune_model("EffCapsNet", "imagenet", input_shape=(28, 28, 1), classes=3)
    with pytest.raises(ValueError, match="expected a preset of CapsNet"):
        fine_tune_model("CapsNet", "EffCapsNet/mnist", input_shape=(28, 28, 1), classes=3)


def test_same_input_keeps_every_backbone_weight_exactly():
    tuned = fine_tune_model(
        "EffCapsNet", "EffCapsNet/fashion_mnist", input_shape=(28, 28, 1), classes=4, reconstruction=True
    )
    stored = _preset_arrays(("EffCapsNet", "fashion_mnist"))
    assert tuned.adapted == {} and tuned.top == ("class_caps", "decoder")
    np.testing.assert_array_equal(
        np.asarray(tuned.model.get_layer("conv1").weights[0]), stored["conv1/0"].astype(np.float32)
    )
    assert (
        applications.EffCapsNet(input_shape=(28, 28, 1), classes=4, reconstruction=True).count_params()
        == tuned.model.count_params()
    )


def test_new_layer_names_match_the_built_model(rgb_tuned):
    from keras_capsules.applications.fine_tune import new_layer_names

    assert new_layer_names("EffCapsNet", "mnist", reconstruction=False) == ["class_caps"]
    assert new_layer_names("EffCapsNet", "EffCapsNet/mnist") == ["class_caps", "decoder"]
