import keras
import numpy as np
import pytest

from keras_capsules.layers import CapsuleDecoder, Length, Mask, Squash
from keras_capsules.testing import run_layer_test


def test_length_and_squash_layers():
    v = np.array([[[3.0, 4.0], [0.0, 0.0]]], "float32")
    np.testing.assert_allclose(keras.ops.convert_to_numpy(Length()(v)), [[5.0, np.sqrt(1e-7)]], rtol=1e-5)
    out = run_layer_test(Squash, {"kind": "squash"}, np.tile(v, (3, 1, 1)), run_export=False)[0]
    np.testing.assert_allclose(np.linalg.norm(out[0, 0]), 25 / 26, rtol=1e-5)


def test_length_refuses_rank_one_naming_the_expected_rank():
    for x in (np.ones((3,), "float32"), keras.Input(shape=(), batch_size=3)):
        with pytest.raises(
            ValueError,
            match=r"Length 'length.*': argument `inputs` expected poses of rank >= 2, \(batch, \.\.\., capsule_dim\), received 'shape \(3,\) \(rank 1\)'",
        ):
            Length()(x)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(Length()(np.array([[3.0, 4.0]], "float32"))), [5.0], rtol=1e-5
    )  # (batch, dim)


def test_mask_by_label_and_by_length():
    poses = np.zeros((2, 3, 2), "float32")
    poses[0, 1] = [1.0, 1.0]
    poses[0, 2] = [0.1, 0.0]
    poses[1, 0] = [0.5, 0.0]
    poses[1, 2] = [0.0, 2.0]
    by_length = keras.ops.convert_to_numpy(Mask()(poses))
    np.testing.assert_allclose(by_length, [[0, 0, 1, 1, 0, 0], [0, 0, 0, 0, 0, 2]])
    by_label = keras.ops.convert_to_numpy(Mask()(poses, np.array([2, 0])))
    np.testing.assert_allclose(by_label, [[0, 0, 0, 0, 0.1, 0], [0.5, 0, 0, 0, 0, 0]])
    by_multi_hot = keras.ops.convert_to_numpy(Mask()(poses, np.array([[0, 1, 1], [1, 0, 0]], "float32")))
    np.testing.assert_allclose(by_multi_hot, [[0, 0, 1, 1, 0.1, 0], [0.5, 0, 0, 0, 0, 0]])
    top2 = keras.ops.convert_to_numpy(Mask(top_k=2)(poses))
    np.testing.assert_allclose(top2[1], [0.5, 0, 0, 0, 0, 2])


def test_decoder_parameters_and_shape():
    decoder = CapsuleDecoder((28, 28, 1))
    out = decoder(np.zeros((2, 160), "float32"))
    assert tuple(out.shape) == (2, 28, 28, 1)
    assert decoder.count_params() == 1_411_344  # docs/reference/models.md#effcapsnet / Sabour decoder
    run_layer_test(
        CapsuleDecoder, {"image_shape": (4, 4, 1), "hidden_units": (8,)}, np.ones((3, 6), "float32"), run_export=False
    )
    with pytest.raises(ValueError, match="image_shape"):
        CapsuleDecoder((0, 28))


def test_mask_and_labels_errors_name_the_argument():
    poses = np.ones((2, 10, 4), "float32")
    with pytest.raises(ValueError, match=r"Mask .*`top_k` expected at most the number of capsules, 10, received 20"):
        Mask(top_k=20)(poses)
    for bad in (13, -1, 200):
        with pytest.raises(ValueError, match=r"`labels` expected class indices in \[0, 10\)"):
            Mask()(poses, np.array([0, bad]))
    with pytest.raises(ValueError, match=r"`labels` expected 2 labels, one per example"):
        Mask()(poses, np.array([1, 2, 3]))
    with pytest.raises(
        ValueError, match=r"`labels` expected class indices \(batch,\) or \(batch, 1\), or one-hot \(batch, 10\)"
    ):
        Mask()(poses, np.zeros((2, 5)))


def test_out_of_range_labels_give_nan_rows_inside_compiled_graphs():
    # No value check is possible while tracing: the bad example's mask becomes NaN (never the silent
    # all-zero one_hot row); good examples are unaffected.
    poses = keras.Input((3, 2))
    labels = keras.Input((), dtype="int32")
    model = keras.Model([poses, labels], Mask()(poses, labels))
    batch = [np.ones((2, 3, 2), "float32"), np.array([1, 7], "int32")]
    if keras.backend.backend() == "torch":
        # PyTorch's predict runs op by op, never in a traced graph: the labels' values are known, so the
        # value check names the bad label instead (the NaN fallback is for TensorFlow and JAX graphs).
        with pytest.raises(
            ValueError, match=r"`labels` expected class indices in \[0, 3\), received '1 label\(s\) such as 7'"
        ):
            model.predict(batch, verbose=0)
        return
    out = model.predict(batch, verbose=0)
    np.testing.assert_array_equal(out[0], [0, 0, 1, 1, 0, 0])
    assert np.all(np.isnan(out[1]))


def test_squash_of_huge_vectors_has_length_one_and_keeps_direction():
    v = np.array([[3e20, 4e20], [3e37, -4e37]], "float32")
    out = keras.ops.convert_to_numpy(Squash()(v))
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.6, -0.8]], rtol=1e-6)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(Length()(v)), [5e20, 5e37], rtol=1e-6)
