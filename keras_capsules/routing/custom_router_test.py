"""A router defined in this file, registered at run time, works in every capsule layer and every paper
model that fits it, with no library file edited (the registry is the only list of routers)."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_capsules import routing
from keras_capsules.applications import contract_test as contract
from keras_capsules.layers import ConcurrentRouting, ConvCaps, FcCaps, PrimaryCaps
from keras_capsules.ops import capsule_length
from keras_capsules.testing import run_router_test
from keras_capsules.testing.tiers import large

NAME = "test_uniform"
VECTOR_ONLY = "test_uniform_vector_only"


class UniformCoupling(routing.Router):
    """Every child splits itself equally among the parents: ``c_ij = 1 / out_caps``, ``v_j = sum_i c_ij u_j|i``.

    Activations: ``|v_j|``. No squash: a squashed sum of many small random votes at initialisation
    is so short that its gradient underflows (and one training step would move nothing). Only
    ``route`` is written: every capability is the base class's default.
    """

    def route(self, votes, activations, training):
        coupling = self.finalize_coupling(ops.ones_like(votes[..., 0]) / votes.shape[2], training)  # (batch, in, out)
        poses = ops.einsum("bij,bijd->bjd", coupling, votes)
        return poses, capsule_length(poses), coupling


class VectorOnlyUniformCoupling(UniformCoupling):
    """The same router, declared to route vector poses only."""

    pose_kinds = ("vector",)


@pytest.fixture(scope="module", autouse=True)
def registered():
    """Registered for this module's tests only (registering at import would add it to other modules' parameters)."""
    routing.register_router(NAME)(UniformCoupling)
    routing.register_router(VECTOR_ONLY)(VectorOnlyUniformCoupling)
    yield
    assert routing.unregister_router(NAME) is UniformCoupling
    assert routing.unregister_router(VECTOR_ONLY) is VectorOnlyUniformCoupling
    assert NAME not in routing.available() and VECTOR_ONLY not in routing.available()


def _np(x):
    return keras.ops.convert_to_numpy(x)


def test_the_registry_knows_it_with_the_base_class_capabilities():
    assert (
        NAME in routing.available()
        and NAME in routing.available(pose="vector")
        and NAME in routing.available(pose="matrix")
    )
    assert NAME in routing.available(iterative=True)
    assert NAME not in routing.available(initial_poses=True) and NAME not in routing.available(child_grid=True)
    assert VECTOR_ONLY in routing.available(pose="vector") and VECTOR_ONLY not in routing.available(pose="matrix")


def test_it_keeps_the_router_contract_and_routes_as_its_equations_say():
    """The library's router checks (shapes, dtypes, config and .keras round trips, the registry, low precision)
    hold for it as they do for the built-in routers, and its outputs are its equations'."""
    votes = np.random.default_rng(0).normal(size=(3, 5, 3, 4)).astype("float32")

    def reference(router, votes, activations):
        poses = votes.sum(axis=1) / 3.0  # (batch, out, dim)
        return poses, np.linalg.norm(poses, axis=-1), 1 / 3

    run_router_test(UniformCoupling, {}, votes, reference=reference, rtol=(1e-5, 1e-5, 1e-6), atol=(1e-6, 1e-6, 0))


@pytest.mark.parametrize("transform", ["vector", "matrix"])
def test_fc_and_conv_capsules_route_and_train_with_it(transform):
    """PrimaryCaps -> ConvCaps -> FcCaps, both routed by name; one training step changes both layers' transforms."""
    stem = [
        keras.layers.Conv2D(4, 3, activation="relu"),
        PrimaryCaps(2, 4, kernel_size=3, strides=1),
    ]  # 8x8 -> 4x4 grid of 2 types
    conv = ConvCaps(2, 4, kernel_size=3, strides=1, router=NAME, transform=transform, name="conv_caps")  # -> 2x2 grid
    fc = FcCaps(3, 4, router=NAME, transform=transform, name="class_caps")
    images = keras.Input((8, 8, 1))
    model = keras.Model(images, fc(conv(stem[1](stem[0](images))))[1])
    assert isinstance(conv.router, UniformCoupling) and isinstance(fc.router, UniformCoupling)
    children = conv(stem[1](stem[0](np.random.default_rng(1).uniform(size=(1, 8, 8, 1)).astype("float32"))))
    _, _, coupling = fc(children, return_coupling=True)
    np.testing.assert_allclose(_np(coupling), np.full((1, 2 * 2 * 2, 3), 1 / 3), rtol=1e-6)  # 2x2 positions x 2 types
    _train_one_step(model, [conv, fc])


def _train_one_step(model, layers, run_eagerly=False):
    """One ``fit`` step on random data: finite loss, and every layer of ``layers`` has a weight that moved."""
    before = [[_np(w) for w in layer.trainable_weights] for layer in layers]
    model.compile(
        optimizer=keras.optimizers.Adam(0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        run_eagerly=run_eagerly,
    )
    rng = np.random.default_rng(2)
    images = rng.uniform(size=(2,) + tuple(model.inputs[0].shape[1:])).astype("float32")
    labels = rng.integers(0, model.outputs[0].shape[-1], size=(2,))
    history = model.fit(images, labels, batch_size=2, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    for layer, weights in zip(layers, before):
        after = [_np(w) for w in layer.trainable_weights]
        assert any(not np.array_equal(a, b) for a, b in zip(weights, after)), (
            f"{layer.name}: no weight moved in one step"
        )


def _class_layer(model):
    """The layer named ``"class_caps"`` (every capsule application's class layer), in a ``ConcurrentRouting`` stack or not."""
    stacks = [layer.capsule_layers for layer in model.layers if isinstance(layer, ConcurrentRouting)]
    return next(layer for layer in model.layers + sum(stacks, []) if layer.name == "class_caps")


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="registry plumbing, the same on every backend; tests/applications_backends_test.py trains every application on JAX and PyTorch",
)
# The default tier: CapsNet and EffCapsNet; the other routed models (5-8 s each) in the large tier.
@pytest.mark.parametrize(
    "constructor",
    [c if c in ("CapsNet", "EffCapsNet") else pytest.param(c, marks=large) for c in contract.routed_constructors()],
)
def test_every_paper_model_builds_and_trains_a_step_with_it(constructor):
    """Every application with a ``router`` argument (from the applications registry), in its tiny configuration.

    ``fit`` runs eagerly (tracing FMCapsNet's 24-block ResNet costs ~30 s for one step); the layer test
    trains in a graph.
    """
    name = contract.router_configuration(constructor)
    model = contract.build_small(name, router=NAME, **contract.router_options(constructor, NAME))
    routers = contract.routers_of(model)
    assert routers and all(isinstance(router, UniformCoupling) for router in routers)
    class_layer = _class_layer(model)
    # SRCapsNet's class layer makes no votes (each child's pose is its vote) and this router has no weights: the
    # layer has nothing of its own to train, so the step must move the weights that feed it.
    assert class_layer.trainable_weights or constructor == "SRCapsNet", constructor
    _train_one_step(model, [class_layer if class_layer.trainable_weights else model], run_eagerly=True)


def test_a_router_lacking_a_capability_is_refused_with_the_routers_that_fit():
    with pytest.raises(
        ValueError,
        match=r"FcCaps 'm'.*`router`.*routes matrix poses.*routing.available\(pose='matrix'\).*VectorOnlyUniformCoupling",
    ):
        FcCaps(3, router=VECTOR_ONLY, transform="matrix", name="m")
    with pytest.raises(
        ValueError, match=rf"MatrixCapsNet: argument `router`.*pose='matrix'.*'{NAME}'.*received '{VECTOR_ONLY}'"
    ):
        contract.build_small("MatrixCapsNet/smallnorb", router=VECTOR_ONLY)
    model = contract.build_small("CapsNet/mnist", router=VECTOR_ONLY)  # vector capsules: it fits
    assert isinstance(model.get_layer("class_caps").router, VectorOnlyUniformCoupling)
