"""ConvCaps ``remat``: training recomputes the votes in the backward pass, with the same outputs and gradients."""

import keras
import numpy as np
import pytest

from keras_capsules import routing
from keras_capsules.layers import ConcurrentRouting, ConvCaps, FcCaps, conv_caps
from keras_capsules.testing.tiers import large


def _gradients(model, x, training=True):
    """A fixed weighted sum of ``model(x, training=training)`` (all its outputs) and its gradients (inputs, then weights).

    ``x``: one array or a list of arrays. The gradient is one compiled program, as in ``fit``: a
    ``tf.function`` graph, or under JAX one jitted program (and one compilation instead of one per op).
    """
    weights = model.trainable_weights
    inputs = list(x) if isinstance(x, (list, tuple)) else [x]
    probe = np.random.default_rng(3).normal(size=(4096,)).astype("float32")

    def weighted(outputs):
        outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
        flat = [keras.ops.reshape(keras.ops.cast(out, "float32"), (-1,)) for out in outputs]
        return sum(keras.ops.sum(out * probe[: out.shape[0]]) for out in flat)

    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        variables = [tf.Variable(value) for value in inputs]

        @tf.function  # a graph, as in fit (TensorFlow's loops and recomputation differ from eager execution there)
        def value_and_grads():
            with tf.GradientTape() as tape:
                value = weighted(model(variables if len(variables) > 1 else variables[0], training=training))
            return value, tape.gradient(value, variables + [w.value for w in weights])

        value, grads = value_and_grads()
        return float(value), [g.numpy() for g in grads]
    import jax

    def pure(values, params):
        with keras.StatelessScope(state_mapping=list(zip(weights, params))):
            return weighted(model(values if len(values) > 1 else values[0], training=training))

    value, (grad_x, grad_w) = jax.jit(jax.value_and_grad(pure, argnums=(0, 1)))(inputs, [w.value for w in weights])
    return float(value), [np.asarray(g) for g in grad_x] + [np.asarray(g) for g in grad_w]


def _pair(build):
    """The same model with remat on and off (same weights)."""
    on, off = build(True), build(False)
    off.set_weights(on.get_weights())
    return on, off


def _conv_model(remat, router="dynamic"):
    inputs = keras.Input((5, 5, 3, 4))
    poses, _ = ConvCaps(2, 4, kernel_size=3, strides=1, router=router, remat=remat, name="conv")(inputs)
    return keras.Model(inputs, poses)


def _concurrent_model(remat):
    inputs = keras.Input((6, 6, 2, 4))
    stack = ConcurrentRouting(
        [
            ConvCaps(3, kernel_size=3, strides=2, transform="matrix", router="inverted_dot_product", remat=remat),
            FcCaps(2, transform="matrix", router="inverted_dot_product"),
        ],
        iterations=3,
    )
    poses, _ = stack(inputs)
    return keras.Model(inputs, poses)


@pytest.mark.parametrize("build, shape", [(_conv_model, (2, 5, 5, 3, 4)), (_concurrent_model, (2, 6, 6, 2, 4))])
def test_remat_keeps_outputs_and_gradients(build, shape):
    on, off = _pair(build)
    x = np.random.default_rng(0).normal(size=shape).astype("float32")
    value_on, grads_on = _gradients(on, x)
    value_off, grads_off = _gradients(off, x)
    np.testing.assert_allclose(value_on, value_off, rtol=1e-6)
    assert len(grads_on) == len(grads_off) == 1 + len(on.trainable_weights)
    for a, b in zip(grads_on, grads_off):
        # Same maths in two compiled programs that may round differently: float32 rounding, judged at the gradient's scale.
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * np.max(np.abs(b)))


def test_remat_only_in_training_and_never_with_random_or_moving_state():
    layer = ConvCaps(2, 4, router="inverted_dot_product")
    layer(np.ones((1, 5, 4, 1, 4), "float32"))
    assert layer.remat and layer.rematerializes(True) and not layer.rematerializes(False)
    assert layer.row_chunks(True) == [(0, 1), (1, 2), (2, 3)] and layer.row_chunks(False) == [(0, 3)]  # one output row at a time
    spatial = ConvCaps(2, transform="matrix", router={"name": "em", "child_grid": [5, 4], "kernel_size": 3, "strides": 1})
    spatial(np.ones((1, 5, 4, 1, 4), "float32"))
    # EM's E-step couples the positions: chunks of rows within the vote budget, in training and at inference.
    assert spatial.rematerializes(True) and spatial.row_chunks(True) == spatial.row_chunks(False) == [(0, 3)]
    assert not ConvCaps(2, 4, router="dynamic", remat=False).rematerializes(True)
    dropout = ConvCaps(2, 4, router={"name": "inverted_dot_product", "dropout": 0.1})
    assert not dropout.rematerializes(True)  # a recomputation would draw another dropout mask
    batch_norm = ConvCaps(2, 4, router=routing.get("fm_agreement"))
    batch_norm(np.ones((1, 3, 3, 1, 4), "float32"))
    assert batch_norm.router.non_trainable_weights and not batch_norm.rematerializes(True)  # moving statistics


def test_remat_config_round_trip_and_type_check():
    layer = ConvCaps(2, 4, remat=False)
    assert ConvCaps.from_config(layer.get_config()).remat is False
    with pytest.raises(TypeError, match=r"argument `remat` expected True or False, received 'yes'"):
        ConvCaps(2, 4, remat="yes")


# --- EM routing across positions (child_grid): chunk by chunk, the votes made anew in every iteration ---

def _em_model(remat, strides=1, activations=True, dtype=None):
    """ConvCaps with EM across positions on a 7x6 grid of 2 types of 4x4 poses; outputs poses, activations, coupling."""
    grid = (7, 6)
    poses = keras.Input(grid + (2, 16))
    acts = keras.Input(grid + (2,))
    router = {"name": "em", "iterations": 3, "child_grid": list(grid), "kernel_size": 3, "strides": strides}
    layer = ConvCaps(3, kernel_size=3, strides=strides, transform="matrix", router=router, remat=remat, dtype=dtype, name="conv")
    if not activations:
        return keras.Model(poses, list(layer(poses, return_coupling=True)))
    return keras.Model([poses, acts], list(layer((poses, acts), return_coupling=True)))


def _em_inputs(seed=0, activations=True):
    rng = np.random.default_rng(seed)
    poses = rng.normal(size=(2, 7, 6, 2, 16)).astype("float32")
    return [poses, rng.uniform(size=(2, 7, 6, 2)).astype("float32")] if activations else poses


# The default tier: training through strided chunks with activations; the other five cases in the large tier.
@pytest.mark.parametrize(
    "strides, activations, training",
    [(2, True, True)] + [pytest.param(*case, marks=large) for case in [(2, True, False), (1, True, True), (1, True, False), (1, False, True), (1, False, False)]],
)
def test_em_across_positions_chunk_by_chunk_matches_the_whole_vote_tensor(monkeypatch, strides, activations, training):
    """remat=False routes the whole vote tensor (the router's own call); remat=True one output row at a
    time (a 1-byte budget), the votes made anew in every iteration and recomputed in the backward pass."""
    monkeypatch.setattr(conv_caps, "CHUNK_VOTE_BYTES", 1)
    chunked, whole = _pair(lambda remat: _em_model(remat, strides, activations))
    layer = chunked.get_layer("conv")
    assert layer.routes_across_positions() and len(layer.row_chunks(training)) == layer.output_grid[0] > 1
    assert not whole.get_layer("conv").routes_across_positions()
    x = _em_inputs(activations=activations)
    out_chunked, out_whole = chunked(x, training=training), whole(x, training=training)
    for a, b in zip(out_chunked, out_whole):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b), rtol=1e-6, atol=1e-7)
    value_chunked, grads_chunked = _gradients(chunked, x, training)
    value_whole, grads_whole = _gradients(whole, x, training)
    np.testing.assert_allclose(value_chunked, value_whole, rtol=1e-6)
    assert len(grads_chunked) == len(grads_whole) == (2 if activations else 1) + len(chunked.trainable_weights)
    for a, b in zip(grads_chunked, grads_whole):
        # float32 rounding at the gradient's scale. A weight of a few entries that every position shares
        # sums its gradient over all positions, chunk by chunk or at once: a different order of one float32
        # sum, 1.1e-6 of the gradient's scale under JAX on an AMD EPYC without AVX-512 (same at 4a5034a).
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=(2e-6 if b.size <= 3 else 1e-6) * np.max(np.abs(b)))


def test_em_across_positions_chunks_keep_the_mixed_precision_outputs(monkeypatch):
    monkeypatch.setattr(conv_caps, "CHUNK_VOTE_BYTES", 1)
    chunked, whole = _pair(lambda remat: _em_model(remat, dtype="mixed_float16"))
    x = _em_inputs(1)
    for a, b in zip(chunked(x), whole(x)):
        assert keras.backend.standardize_dtype(a.dtype) == "float16"
        # float32 routing either way; the float16 vote products of a chunk and of the whole tensor may round apart.
        np.testing.assert_allclose(keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b), rtol=1e-2, atol=1e-3)


def test_em_across_positions_chunks_follow_the_vote_budget(monkeypatch):
    layer = _em_model(True).get_layer("conv")  # 5 x 4 output positions, 9 * 2 children, 3 parents, 16 entries
    row_bytes = 4 * (9 * 2) * 3 * 16 * 4
    monkeypatch.setattr(conv_caps, "CHUNK_VOTE_BYTES", 2 * row_bytes + 1)
    assert layer.row_chunks(True) == layer.row_chunks(False) == [(0, 2), (2, 4), (4, 5)]
    monkeypatch.setattr(conv_caps, "CHUNK_VOTE_BYTES", 10**9)
    assert layer.row_chunks(True) == [(0, 5)]
    assert _em_model(False).get_layer("conv").row_chunks(True) == [(0, 5)]  # no remat: the whole vote tensor


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="TensorFlow's allocator statistics measure the live tensors")
@large
def test_em_across_positions_training_step_keeps_far_less_than_the_vote_tensor(monkeypatch):
    """The chunks take turns (each waits for the previous one, forward and backward), so a training
    step's live tensors stay near one whole vote tensor here (8 one-row chunks, each with a few
    chunk-sized temporaries); routing the whole tensor keeps about ten."""
    import tensorflow as tf

    monkeypatch.setattr(conv_caps, "CHUNK_VOTE_BYTES", 1)
    batch, grid, types, parents = 8, (17, 17), 8, 8
    rng = np.random.default_rng(2)
    poses = tf.constant(rng.normal(size=(batch,) + grid + (types, 16)).astype("float32"))
    acts = tf.constant(rng.uniform(size=(batch,) + grid + (types,)).astype("float32"))
    votes_bytes = batch * 8 * 8 * (9 * types) * parents * 16 * 4  # 8x8 output positions: 18.9 MB
    peaks = {}
    for remat in (True, False):
        router = {"name": "em", "iterations": 2, "child_grid": list(grid), "kernel_size": 3, "strides": 2}
        layer = ConvCaps(parents, kernel_size=3, strides=2, transform="matrix", router=router, remat=remat)
        layer((poses[:1], acts[:1]))

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                out_poses, out_acts = layer((poses, acts), training=True)
                loss = tf.reduce_sum(out_poses) + tf.reduce_sum(out_acts)
            return tape.gradient(loss, layer.trainable_weights)

        step.get_concrete_function()
        tf.config.experimental.reset_memory_stats("CPU:0")
        held = tf.config.experimental.get_memory_info("CPU:0")["current"]  # tensors other tests of this process still hold
        step()
        peaks[remat] = tf.config.experimental.get_memory_info("CPU:0")["peak"] - held
    assert peaks[True] < 2 * votes_bytes and peaks[False] > 5 * votes_bytes, (peaks, votes_bytes)


# --- routers that route each position on its own: one output row after another, in a loop ---

def _row_step(layer, poses):
    """A tf.function training step of ``layer`` alone: the gradient of its outputs' sum with respect to its weights."""
    import tensorflow as tf

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            out_poses, out_acts = layer(poses, training=True)
            loss = tf.reduce_sum(out_poses) + tf.reduce_sum(out_acts)
        return tape.gradient(loss, layer.trainable_weights)

    return step


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="counts the Python traces of a TensorFlow graph")
def test_rows_route_in_a_loop_traced_once_whatever_the_number_of_rows():
    """The first step's graph does not grow with the image: the router is traced a fixed number of
    times for 3 output rows and for 12 (the row loop's body, and its output signature), not per row."""
    traces = {}
    for size in (5, 14):
        layer = ConvCaps(2, 4, kernel_size=3, strides=1, router="dynamic", name="conv")
        poses = np.random.default_rng(0).normal(size=(2, size, size, 3, 4)).astype("float32")
        layer(poses[:1])
        assert len(layer.row_chunks(True)) == size - 2
        calls = []
        original = layer.router.call
        layer.router.call = lambda *args, **kwargs: calls.append(1) or original(*args, **kwargs)
        _row_step(layer, poses).get_concrete_function()
        traces[size] = len(calls)
    assert traces[5] == traces[14] <= 3, traces


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="TensorFlow's allocator statistics measure the live tensors")
def test_rows_take_turns_so_a_training_step_keeps_about_one_rows_votes():
    """Rows routed in turn, forward and backward: a training step's live tensors are one row's routing
    temporaries (a few row-sized tensors) and the gathered receptive fields, far below the layer's
    whole vote tensor (24 rows here; 28 MB measured against 85 MB; routing it whole keeps 690 MB)."""
    import tensorflow as tf

    batch, size, types, parents, dim = 4, 26, 8, 16, 8
    poses = tf.constant(np.random.default_rng(4).normal(size=(batch, size, size, types, dim)).astype("float32"))
    votes_bytes = batch * 24 * 24 * (9 * types) * parents * dim * 4  # 24x24 output positions: 84.9 MB
    layer = ConvCaps(parents, dim, kernel_size=3, strides=1, router="dynamic")
    layer(poses[:1])
    step = _row_step(layer, poses)
    step.get_concrete_function()
    tf.config.experimental.reset_memory_stats("CPU:0")
    held = tf.config.experimental.get_memory_info("CPU:0")["current"]
    step()
    peak = tf.config.experimental.get_memory_info("CPU:0")["peak"] - held
    assert peak < 0.5 * votes_bytes, (peak, votes_bytes)
