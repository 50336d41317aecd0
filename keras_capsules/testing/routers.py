"""Router checks shared by every router's tests (keras-hub's ``run_layer_test`` style).

``run_router_test`` is the one-stop check of a router class against the router contract
(docs/routers/index.md): shapes and dtypes of ``(poses, activations[, coupling])``, config and
``.keras`` round trips, the registry, the refusal of votes of another rank, finite low-precision
outputs and, where given, a NumPy reference. The smaller helpers below are the pieces a router's own
tests repeat: a float64 view of any tensor, output-by-output comparison with a reference, finite
outputs (and gradients) in a dtype, and the registry round trip of one configuration.
"""

import keras
import numpy as np
import pytest

from keras_capsules import routing
from keras_capsules.testing.gradients import input_gradient
from keras_capsules.testing.test_case import assert_finite, run_layer_test

#: The names of a router's outputs, in the contract's order.
OUTPUTS = ("poses", "activations", "coupling")


def as_float64(x):
    """A tensor of any float dtype (bfloat16 included, which NumPy lacks) as a float64 NumPy array."""
    return np.asarray(keras.ops.convert_to_numpy(keras.ops.cast(x, "float32")), dtype="float64")


def assert_routes_like(outputs, expected, rtol=1e-4, atol=1e-5):
    """Compares a router's outputs with a reference's, output by output.

    Args:
        outputs: the router's ``(poses, activations[, coupling])``.
        expected: the reference's values in the same order (NumPy arrays, or numbers that every
            entry must equal), at most as many as ``outputs``; an entry ``None`` is not compared.
        rtol: relative tolerance, one number for every output or one per entry of ``expected``.
        atol: absolute tolerance, one number for every output or one per entry of ``expected``.
    """
    assert len(expected) <= len(outputs), f"{len(expected)} expected outputs for a router returning {len(outputs)}"
    rtols, atols = (_per_output(tolerance, len(expected)) for tolerance in (rtol, atol))
    for name, got, want, relative, absolute in zip(OUTPUTS, outputs, expected, rtols, atols):
        if want is not None:
            np.testing.assert_allclose(as_float64(got), want, rtol=relative, atol=absolute, err_msg=name)


def _per_output(tolerance, count):
    """``tolerance`` (a number, or one per output) as a tuple of ``count`` numbers."""
    tolerances = tuple(tolerance) if isinstance(tolerance, (tuple, list)) else (tolerance,) * count
    assert len(tolerances) == count, f"{len(tolerances)} tolerances for {count} expected outputs"
    return tolerances


def assert_routes_finitely(router, votes, activations=None, training=None, gradient_of=None):
    """Routes ``votes`` and asserts every output is in the votes' dtype and finite.

    Args:
        router: a router whose compute dtype is the votes' (``Router(dtype=...)``).
        votes: ``(batch, in_caps, out_caps, out_dim)`` tensor in the dtype under test.
        activations: ``(batch, in_caps)`` child activations, or ``None``.
        training: the call's ``training``.
        gradient_of: ``None``, or a function of ``(poses, activations)`` giving the tensor(s) whose
            summed gradient with respect to the votes (and to the activations, where given) must be
            finite too; e.g. weight layer-normalised poses, whose plain sum has a zero gradient.

    Returns:
        The outputs ``(poses, activations, coupling)``.
    """
    outputs = router(votes, activations, training=training, return_coupling=True)
    dtype = keras.backend.standardize_dtype(votes.dtype)
    assert [keras.backend.standardize_dtype(o.dtype) for o in outputs] == [dtype] * 3, (dtype, outputs)
    assert_finite([keras.ops.cast(o, "float32") for o in outputs])
    if gradient_of is not None:
        assert_finite(
            input_gradient(lambda v: gradient_of(router(v, activations, training=training)), votes), "votes gradient"
        )
        if activations is not None:
            gradient = input_gradient(lambda a: gradient_of(router(votes, a, training=training)), activations)
            assert_finite(gradient, "activations gradient")
    return outputs


def assert_registry_round_trip(name, **kwargs):
    """The router ``name`` made by the registry from a name, a config dict and its Keras serialisation.

    All three are instances of the class registered under ``name`` (listed by ``routing.available()``)
    with the same config (less the per-instance layer ``name``).

    Returns:
        The router made from the name.
    """
    assert name in routing.available(), f"{name!r} is not registered"
    router = routing.get(name, **kwargs)
    assert type(router).router_name == name, (name, type(router))
    config = _config_without_name(router)
    for identifier in ({"name": name, **kwargs}, keras.saving.serialize_keras_object(router)):
        again = routing.get(identifier)
        assert type(again) is type(router) and _config_without_name(again) == config, identifier
    return router


def _config_without_name(layer):
    """A layer's config less its ``name``, which Keras numbers per instance."""
    return {key: value for key, value in layer.get_config().items() if key != "name"}


def run_router_test(
    router_cls,
    init_kwargs,
    votes,
    activations=None,
    reference=None,
    initialize=None,
    rtol=1e-4,
    atol=1e-5,
    dtypes=("float16", "bfloat16"),
    run_saving=True,
):
    """Runs the router contract's checks on a router class.

    - ``run_layer_test`` (call, batch sizes 2 and 3 in a functional model, config and ``.keras``
      round trips, SavedModel export on TensorFlow) with poses ``(batch, out_caps, out_dim)`` and
      activations ``(batch, out_caps)``;
    - with ``activations`` and ``return_coupling=True``: the coupling ``(batch, in_caps, out_caps)`` too,
      every output float32 and finite, and the first two outputs those of a call without the coupling;
    - the registry round trip of ``init_kwargs`` under the class's registered name
      (``assert_registry_round_trip``), giving the config of ``router_cls(**init_kwargs)``;
    - votes of rank 3 are refused with an error naming the class, ``votes`` and rank 4;
    - for each dtype of ``dtypes``: ``router_cls(dtype=dtype, **init_kwargs)`` on the votes (and
      activations) cast to it routes finitely in that dtype (``assert_routes_finitely``);
    - where ``reference`` is given: the router's outputs against it (``assert_routes_like``), after
      ``initialize`` has given the router's weights their values.

    Args:
        router_cls: a registered router class.
        init_kwargs: constructor arguments.
        votes: float32 ``(batch, in_caps, out_caps, out_dim)`` NumPy votes with a batch of at least 3.
        activations: ``(batch, in_caps)`` NumPy child activations for the calls that take them, or ``None``.
        reference: ``None``, or ``reference(router, votes, activations)`` giving the expected
            ``(poses, activations[, coupling])`` (``None`` entries not compared) of the built
            ``router`` from float64 votes and activations (``None`` where not given).
        initialize: ``None``, or ``initialize(router)`` giving the weights of the built router
            non-default values (e.g. random ones, so that the reference sees every weight) before
            its outputs are taken; the reference reads them from ``router``.
        rtol, atol: the reference comparison's tolerances (see ``assert_routes_like``).
        dtypes: the low-precision dtypes to route in; ``()`` where the router's own tests check them
            over several magnitudes.
        run_saving: run the ``.keras`` round trip.

    Returns:
        The router the contract and the reference were checked on (built).
    """
    batch, in_caps, out_caps, out_dim = votes.shape
    run_layer_test(
        router_cls, init_kwargs, votes, expected_output_shapes=[(batch, out_caps, out_dim), (batch, out_caps)],
        run_saving=run_saving,
    )  # fmt: skip
    router = router_cls(**init_kwargs)
    if initialize is not None:
        router.build(votes.shape)
        initialize(router)
    outputs = router(votes, activations, return_coupling=True)
    shapes = [(batch, out_caps, out_dim), (batch, out_caps), (batch, in_caps, out_caps)]
    assert [tuple(o.shape) for o in outputs] == shapes, [tuple(o.shape) for o in outputs]
    assert [keras.backend.standardize_dtype(o.dtype) for o in outputs] == ["float32"] * 3
    assert_finite(outputs)
    assert_routes_like(router(votes, activations), [as_float64(o) for o in outputs[:2]], rtol=0, atol=0)

    registered = assert_registry_round_trip(router_cls.router_name, **init_kwargs)
    assert isinstance(registered, router_cls) and _config_without_name(registered) == _config_without_name(router)
    with pytest.raises(ValueError, match=rf"{router_cls.__name__}.*votes.*rank 4"):
        router_cls(**init_kwargs)(votes[0])

    for dtype in dtypes:
        low = None if activations is None else keras.ops.cast(activations, dtype)
        assert_routes_finitely(router_cls(dtype=dtype, **init_kwargs), keras.ops.cast(votes, dtype), low)

    if reference is not None:
        acts = None if activations is None else np.asarray(activations, "float64")
        assert_routes_like(outputs, reference(router, votes.astype("float64"), acts), rtol=rtol, atol=atol)
    return router
