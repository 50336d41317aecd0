import keras
import numpy as np
import pytest

from keras_capsules import routing
from keras_capsules.applications import CapsuleClassifier, FMCapsNet, get_configuration
from keras_capsules.testing import assert_finite, assert_parameter_counts, count_weights, run_model_saving_test


def images(n=2, shape=(40, 40, 1), seed=0):
    return np.random.default_rng(seed).uniform(size=(n,) + shape).astype("float32")


def test_cifar_model_parameter_count_and_forward():
    model = FMCapsNet(classifier_activation="softmax")
    assert_parameter_counts(model, 903_760, 903_760 + 3_744)
    backbone = sum(
        count_weights(l.trainable_weights) for l in model.layers if l.name.startswith(("conv1", "stage", "final"))
    )
    assert backbone == 757_712
    scores = keras.ops.convert_to_numpy(model(images(1, (32, 32, 3))))
    assert scores.shape == (1, 10)
    np.testing.assert_allclose(scores.sum(-1), 1.0, rtol=1e-5)
    caps = [model.get_layer(n) for n in ("caps1", "caps2", "class_caps")]
    assert [c.router.normalize_pose for c in caps] == [False, False, True]
    assert all(isinstance(c.router, routing.FMAgreementRouter) for c in caps)


def test_affnist_model_counts_and_registry():
    model = FMCapsNet(variant="affnist")
    entry = get_configuration("FMCapsNet/affnist")
    assert entry.trainable_params == 195_376
    assert_parameter_counts(model, entry.trainable_params, entry.total_params, entry.source)
    assert get_configuration("FMCapsNet/cifar10").trainable_params == 903_760


def test_affnist_reconstruction_decoder_trains_and_round_trips():
    model = FMCapsNet(variant="affnist", reconstruction=True)
    assert isinstance(model, CapsuleClassifier)
    decoder = model.decoder
    assert_parameter_counts(decoder, 186_145, 199_041)
    assert count_weights(model.trainable_weights) == 195_376 + 186_145
    x, y = images(4), np.array([0, 3, 3, 9])
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy())
    scores, poses = model(x, training=True)
    assert tuple(poses.shape) == (4, 10, 16)
    total = float(keras.ops.convert_to_numpy(model.compute_loss(x, y, (scores, poses))))
    classification = float(keras.ops.convert_to_numpy(model.compute_loss(x, y, scores)))
    assert np.isfinite(total) and total > classification  # the reconstruction term is added
    recon = keras.ops.convert_to_numpy(model.reconstruct(x, y))
    assert recon.shape == (4, 40, 40, 1) and recon.min() >= 0 and recon.max() <= 1
    run_model_saving_test(model, x)


def test_include_top_false_input_tensor_and_logits():
    features = FMCapsNet(variant="affnist", include_top=False)
    assert tuple(features.output.shape) == (None, 100 * 16)
    with pytest.raises(ValueError, match=r"FMCapsNet.*pooling.*100 fully connected capsules"):
        FMCapsNet(variant="affnist", include_top=False, pooling="avg")
    tensor = keras.Input((40, 40, 1))
    model = FMCapsNet(variant="affnist", input_tensor=tensor, classifier_activation=None, classes=4)
    assert model.inputs[0] is tensor
    logits = keras.ops.convert_to_numpy(model(images()))
    assert logits.shape == (2, 4) and not np.allclose(logits.sum(-1), 1.0)
    # FMRouting's 1/n scale: a_j = (|sum_i u_i|^2 - n) / n for n = 100 unit votes, so -1 <= a_j <= n - 1.
    assert model.get_layer("class_caps").router.scale == "code"
    assert np.all((logits >= -1 - 1e-4) & (logits <= 100 - 1 + 1e-4))


def test_router_override():
    model = FMCapsNet(variant="affnist", router="dynamic", routing_iterations=2)
    assert isinstance(model.get_layer("class_caps").router, routing.DynamicRouter)
    # the dynamic router adds its 10 x 16 bias; the FM vote batch norm (32 parameters) is gone
    assert count_weights(model.trainable_weights) == 195_376 - 32 + 160
    assert_finite(model(images()))
    # an instance is a template: every capsule layer gets its own router; FM's hidden layers keep s_j unnormalised
    cifar = FMCapsNet(router=routing.FMAgreementRouter(scale="code"), input_shape=(8, 8, 3))
    fm = [cifar.get_layer(name).router for name in ("caps1", "caps2", "class_caps")]
    assert len({id(r) for r in fm}) == 3 and all(r.scale == "code" and r.normalize_pose for r in fm)
    named = FMCapsNet(router={"name": "fm_agreement", "scale": "code"}, input_shape=(8, 8, 3))
    assert [named.get_layer(n).router.normalize_pose for n in ("caps1", "caps2", "class_caps")] == [False, False, True]
    squash = FMCapsNet(variant="affnist", router={"name": "fm_agreement", "activation": "squash"})
    scores = keras.ops.convert_to_numpy(squash(images()))
    assert np.all((scores >= 0) & (scores < 1))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"variant": "mnist"}, ValueError, "variant"),
        ({"reconstruction": True}, ValueError, "reconstruction"),
        ({"router": "nope"}, ValueError, "FMCapsNet.*router"),
        ({"weights": "missing.weights.h5"}, FileNotFoundError, "FMCapsNet.*weights"),
        ({"input_shape": (4, 4, 3)}, ValueError, "input_shape"),
        ({"classes": 0}, ValueError, "classes"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        FMCapsNet(**kwargs)
