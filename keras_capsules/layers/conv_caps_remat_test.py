"""ConvCaps ``remat``: training recomputes the votes in the backward pass, with the same outputs and gradients."""

import keras
import numpy as np
import pytest

from keras_capsules import routing
from keras_capsules.layers import ConcurrentRouting, ConvCaps, FcCaps, conv_caps
from keras_capsules.ops.remat import recomputation
from keras_capsules.testing.tiers import large


def _probe():
    """The fixed weights of :func:`_gradients`' sum, one per output entry (flattened)."""
    return np.random.default_rng(3).normal(size=(4096,)).astype("float32")


def _weighted_scale(outputs):
    """``sum |probe * output|`` over every output entry: the scale of :func:`_gradients`' value, whose float32
    rounding error is relative to it (the signed sum itself can cancel to a far smaller number)."""
    probe = _probe()
    flat = [np.asarray(keras.ops.convert_to_numpy(out), "float64").reshape(-1) for out in outputs]
    return sum(float(np.sum(np.abs(out * probe[: out.size]))) for out in flat)


def _gradients(model, x, training=True, compiled=True):
    """A fixed weighted sum of ``model(x, training=training)`` (all its outputs) and its gradients (inputs, then weights).

    ``x``: one array or a list of arrays. The gradient is one compiled program, as in ``fit``: a
    ``tf.function`` graph, or under JAX one jitted program (and one compilation instead of one per op);
    under TensorFlow ``compiled=False`` runs it op by op instead, as PyTorch always does.
    """
    weights = model.trainable_weights
    inputs = list(x) if isinstance(x, (list, tuple)) else [x]
    probe = _probe()

    def weighted(outputs):
        outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
        flat = [keras.ops.reshape(keras.ops.cast(out, "float32"), (-1,)) for out in outputs]
        return sum(keras.ops.sum(out * keras.ops.convert_to_tensor(probe[: out.shape[0]])) for out in flat)

    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        variables = [tf.Variable(value) for value in inputs]

        def value_and_grads():
            with tf.GradientTape() as tape:
                value = weighted(model(variables if len(variables) > 1 else variables[0], training=training))
            return value, tape.gradient(value, variables + [w.value for w in weights])

        # A graph, as in fit (TensorFlow's loops and recomputation differ from eager execution there);
        # ``compiled=False``: op by op, a reference free of the graph optimiser's rewrites.
        value, grads = (tf.function(value_and_grads) if compiled else value_and_grads)()
        return float(value), [g.numpy() for g in grads]
    if keras.backend.backend() == "torch":
        import torch

        # Eager autograd: PyTorch runs op by op whatever ``compiled`` says.
        tensors = [torch.tensor(np.asarray(value), requires_grad=True) for value in inputs]
        value = weighted(model(tensors if len(tensors) > 1 else tensors[0], training=training))
        grads = torch.autograd.grad(value, tensors + [w.value for w in weights])
        return float(value), [g.detach().cpu().numpy() for g in grads]
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
    assert layer.row_chunks(True) == [(0, 1), (1, 2), (2, 3)] and layer.row_chunks(False) == [
        (0, 3)
    ]  # one output row at a time
    spatial = ConvCaps(
        2, transform="matrix", router={"name": "em", "child_grid": [5, 4], "kernel_size": 3, "strides": 1}
    )
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
    layer = ConvCaps(
        3, kernel_size=3, strides=strides, transform="matrix", router=router, remat=remat, dtype=dtype, name="conv"
    )
    if not activations:
        return keras.Model(poses, list(layer(poses, return_coupling=True)))
    return keras.Model([poses, acts], list(layer((poses, acts), return_coupling=True)))


def _em_inputs(seed=0, activations=True):
    rng = np.random.default_rng(seed)
    poses = rng.normal(size=(2, 7, 6, 2, 16)).astype("float32")
    return [poses, rng.uniform(size=(2, 7, 6, 2)).astype("float32")] if activations else poses


def _relative_error(x, reference):
    """``max |x - reference| / max(|reference|, 1e-3)``: relative, entries near zero judged at 1e-3."""
    return float(np.max(np.abs(x - reference) / np.maximum(np.abs(reference), 1e-3)))


def _em_float64_reference(layer, x, strides):
    """``(poses, activations, coupling)`` of EM across positions in float64 NumPy (``em_test.np_em_spatial``)
    on the float32 votes of ``layer`` (a built :func:`_em_model` layer) for the inputs ``x``."""
    from keras_capsules.routing.em_test import np_em_spatial

    poses = keras.ops.convert_to_tensor(x[0] if isinstance(x, list) else x)
    votes = keras.ops.convert_to_numpy(layer.vote_transform(layer._gather(poses))).astype("float64")
    if isinstance(x, list):
        acts = keras.ops.convert_to_numpy(layer._gather(keras.ops.convert_to_tensor(x[1]))).astype("float64")
    else:
        acts = np.ones(votes.shape[:2])
    betas = [keras.ops.convert_to_numpy(beta).astype("float64") for beta in (layer.router.beta_u, layer.router.beta_a)]
    return np_em_spatial(votes, acts.reshape(votes.shape[:2]), *betas, layer.router.iterations, (7, 6), 3, strides)


# The default tier: training through strided chunks with activations; the other five cases in the large tier.
@pytest.mark.parametrize(
    "strides, activations, training",
    [(2, True, True)]
    + [
        pytest.param(*case, marks=large)
        for case in [(2, True, False), (1, True, True), (1, True, False), (1, False, True), (1, False, False)]
    ],
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
    # Under TensorFlow both paths run the same kernels: within 1e-6 of each other. Under JAX the loop's body
    # is one fused XLA program whose rounding differs, and EM's E-step exponentiates logits of hundreds:
    # the coupling moves by ~2e-5. There each path is judged against the float64 NumPy routing of the same
    # votes: the chunked path's distance to the whole path is at most twice the whole path's own distance
    # from it (both float32 paths sit 1e-6-2e-4 from the exact routing). So too under TensorFlow in training,
    # where the router compiles its steps with XLA (``jit_compile``).
    tight = keras.backend.backend() == "tensorflow" and not layer.router.compiles(training)
    exact = _em_float64_reference(whole.get_layer("conv"), x, strides)
    for a, b, reference in zip(out_chunked, out_whole, exact):
        a, b = (keras.ops.convert_to_numpy(t).astype("float64") for t in (a, b))
        whole_error = _relative_error(b, reference.reshape(b.shape))
        assert whole_error < 1e-3, whole_error  # the reference itself is right (the router's own test: 1e-3)
        if tight:
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
        else:
            assert _relative_error(a, b) <= 2 * whole_error + 1e-7, (_relative_error(a, b), whole_error)
    value_chunked, grads_chunked = _gradients(chunked, x, training)
    # In training the chunks go through a loop, whose body TensorFlow's graph optimiser rewrites otherwise
    # than the whole-tensor path (that path alone, graph against eager, moves its gradients by up to 3.7e-6
    # of their scale here): the reference runs op by op. At inference the chunks are unrolled and rewritten
    # as the whole path is: both in a graph.
    value_whole, grads_whole = _gradients(whole, x, training, compiled=not training)
    np.testing.assert_allclose(value_chunked, value_whole, atol=1e-6 * _weighted_scale(out_whole))
    assert len(grads_chunked) == len(grads_whole) == (2 if activations else 1) + len(chunked.trainable_weights)
    for a, b in zip(grads_chunked, grads_whole):
        # float32 rounding at the gradient's scale. A weight of a few entries that every position shares
        # sums its gradient over all positions, chunk by chunk or at once: a different order of one float32
        # sum (2e-6 of the scale). Under JAX, as for the other routers' remat above, 1e-5: the chunked
        # gradients differ by up to 2.1e-6 of their scale (the fused loop body; see the outputs above).
        scale = (2e-6 if b.size <= 3 else 1e-6) if tight else 1e-5
        np.testing.assert_allclose(a, b, rtol=max(scale, 1e-6), atol=scale * np.max(np.abs(b)))


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
    assert (
        layer.row_chunks(True) == layer.row_chunks(False) == [(r, r + 1) for r in range(5)]
    )  # equal chunks: 5 rows, 1 each
    strided = _em_model(True, strides=2).get_layer("conv")  # 3 x 2 output positions
    strided_row_bytes = 2 * (9 * 2) * 3 * 16 * 4
    monkeypatch.setattr(conv_caps, "CHUNK_VOTE_BYTES", 2 * strided_row_bytes)
    assert strided.row_chunks(True) == [(0, 1), (1, 2), (2, 3)]  # 2 rows would fit, but 2 does not divide 3
    monkeypatch.setattr(conv_caps, "CHUNK_VOTE_BYTES", 3 * strided_row_bytes)
    assert strided.row_chunks(True) == [(0, 3)]
    monkeypatch.setattr(conv_caps, "CHUNK_VOTE_BYTES", 10**9)
    assert layer.row_chunks(True) == [(0, 5)]
    assert _em_model(False).get_layer("conv").row_chunks(True) == [(0, 5)]  # no remat: the whole vote tensor


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="counts the Python traces of a TensorFlow graph")
def test_em_across_positions_chunks_are_traced_once_per_iteration_whatever_their_number(monkeypatch):
    import tensorflow as tf

    traces = {}
    for budget in (1, 10**9):  # five one-row chunks, or one chunk
        monkeypatch.setattr(conv_caps, "CHUNK_VOTE_BYTES", budget)
        model = _em_model(True)
        layer = model.get_layer("conv")
        calls = []
        original = layer.router._m_step
        layer.router._m_step = lambda *args: calls.append(1) or original(*args)
        poses, acts = (tf.constant(x) for x in _em_inputs())

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                loss = sum(tf.reduce_sum(out) for out in model([poses, acts], training=True))
            return tape.gradient(loss, model.trainable_weights)

        step.get_concrete_function()
        traces[len(layer.row_chunks(True))] = len(calls)
    assert traces[5] == traces[1], traces


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="TensorFlow's allocator statistics measure the live tensors"
)
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
        held = tf.config.experimental.get_memory_info("CPU:0")[
            "current"
        ]  # tensors other tests of this process still hold
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


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="TensorFlow's allocator statistics measure the live tensors"
)
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


# --- at inference: chunks of rows within the vote budget, one after another, unrolled ---


def _chunk_pair(router, transform="vector", dim=4, strides=2, padding="valid"):
    """ConvCaps on a 7x6 grid of 3 types with ``router``, remat on (chunks at inference) and off (the whole tensor), same weights."""

    def build(remat):
        layer = ConvCaps(
            2, dim, kernel_size=3, strides=strides, padding=padding, transform=transform, router=router, remat=remat
        )
        layer(_chunk_inputs(dim))
        return layer

    on, off = build(True), build(False)
    off.set_weights(on.get_weights())
    return on, off


def _chunk_inputs(dim, seed=5):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(2, 7, 6, 3, dim)).astype("float32"), rng.uniform(size=(2, 7, 6, 3)).astype("float32")


def test_inference_chunks_of_rows_follow_the_vote_budget_and_differ_by_at_most_one_row(monkeypatch):
    layer, whole = _chunk_pair("dynamic", strides=1)  # 5 x 4 output positions, 9 * 3 children, 2 parents of 4 entries
    row_bytes = 4 * (9 * 3) * 2 * 4 * 4
    monkeypatch.setattr(conv_caps, "CHUNK_VOTE_BYTES", 2 * row_bytes)
    assert layer.row_chunks(False) == [(0, 1), (1, 3), (3, 5)]  # 5 rows, at most 2 a chunk: 3 chunks of 1, 2 and 2 rows
    assert layer.row_chunks(True) == [(r, r + 1) for r in range(5)]  # training: one row at a time, in a loop
    monkeypatch.setattr(conv_caps, "CHUNK_VOTE_BYTES", 4 * row_bytes)
    assert layer.row_chunks(False) == [(0, 2), (2, 5)]
    monkeypatch.setattr(conv_caps, "CHUNK_VOTE_BYTES", 5 * row_bytes)
    assert layer.row_chunks(False) == [(0, 5)]  # the whole tensor fits: one range
    monkeypatch.setattr(conv_caps, "CHUNK_VOTE_BYTES", 1)
    assert layer.row_chunks(False) == [(r, r + 1) for r in range(5)]
    assert whole.row_chunks(False) == [(0, 5)]  # remat=False: the whole tensor


@pytest.mark.parametrize("padding", ["valid", "same"])
def test_inference_chunks_match_numpy_dynamic_routing_of_every_position(monkeypatch, padding):
    """Each position's dynamic routing, in float64 NumPy (``dynamic_test.np_dynamic_routing``), on the layer's float32 votes."""
    from keras_capsules.routing.dynamic_test import np_dynamic_routing

    monkeypatch.setattr(conv_caps, "CHUNK_VOTE_BYTES", 1)
    layer, _ = _chunk_pair("dynamic", padding=padding)
    poses, _ = _chunk_inputs(4)
    assert len(layer.row_chunks(False)) == layer.output_grid[0] > 1
    out_poses, out_acts, coupling = (keras.ops.convert_to_numpy(t) for t in layer(poses, return_coupling=True))
    votes = keras.ops.convert_to_numpy(layer.vote_transform(layer._gather(keras.ops.convert_to_tensor(poses))))
    bias = keras.ops.convert_to_numpy(layer.router.bias).astype("float64")
    expected, expected_coupling = np_dynamic_routing(votes.astype("float64"), layer.router.iterations, bias=bias)
    np.testing.assert_allclose(out_poses.reshape(expected.shape), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        out_acts.reshape(expected.shape[:2]), np.linalg.norm(expected, axis=-1), rtol=1e-4, atol=1e-5
    )
    np.testing.assert_allclose(coupling, expected_coupling, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "router, transform, dim",
    [
        ("inverted_dot_product", "vector", 4),
        ("kernel", "vector", 4),
        ("lstm", "vector", 4),
        ("self_attention", "vector", 4),
        ("fm_agreement", "vector", 4),  # batch normalisation: its moving statistics at inference
        ("em", "matrix", 16),  # EM without child_grid: each position on its own
    ],
)
def test_inference_chunks_of_every_router_match_the_whole_vote_tensor(monkeypatch, router, transform, dim):
    monkeypatch.setattr(conv_caps, "CHUNK_VOTE_BYTES", 1)
    chunked, whole = _chunk_pair(router, transform, dim)
    assert len(chunked.row_chunks(False)) == chunked.output_grid[0] == 3 and whole.row_chunks(False) == [(0, 3)]
    x = _chunk_inputs(dim)
    for a, b in zip(chunked(x, return_coupling=True), whole(x, return_coupling=True)):
        # The same per-position arithmetic on fewer positions at a time: equal to float32 rounding.
        np.testing.assert_allclose(keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_inference_chunks_keep_the_mixed_precision_outputs(monkeypatch, policy):
    monkeypatch.setattr(conv_caps, "CHUNK_VOTE_BYTES", 1)

    def build(remat):
        layer = ConvCaps(2, 4, kernel_size=3, strides=2, router="dynamic", remat=remat, dtype=policy)
        layer(_chunk_inputs(4))
        return layer

    chunked, whole = build(True), build(False)
    whole.set_weights(chunked.get_weights())
    x = _chunk_inputs(4)
    assert len(chunked.row_chunks(False)) == 3
    for a, b in zip(chunked(x), whole(x)):
        assert keras.backend.standardize_dtype(a.dtype) == policy.split("_")[1]
        a, b = (keras.ops.convert_to_numpy(keras.ops.cast(t, "float32")) for t in (a, b))
        assert np.all(np.isfinite(a))
        # Per-position arithmetic either way; the low-precision vote products may round apart.
        np.testing.assert_allclose(a, b, rtol=2e-2, atol=2e-2)


def test_one_non_finite_example_leaves_the_others_chunks_alone(monkeypatch):
    # The chunks are chained through their outputs: a NaN in one example's output must not reach the
    # next chunk's other examples. Whole path, per example: only example 0 is NaN.
    monkeypatch.setattr(conv_caps, "CHUNK_VOTE_BYTES", 1)  # one output row a chunk
    chunked, whole = _chunk_pair("dynamic", strides=1)
    poses, activations = _chunk_inputs(4)
    poses[0, 0, 0, 0, 0] = np.nan
    assert len(chunked.row_chunks(False)) == 5
    for a, b in zip(chunked((poses, activations)), whole((poses, activations))):
        a, b = keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b)
        assert np.all(np.isfinite(a[1])) and np.isnan(a[0]).any()
        np.testing.assert_allclose(a[1], b[1], rtol=1e-6, atol=1e-6)


def test_inference_chunks_take_concurrent_routings_initial_poses(monkeypatch):
    monkeypatch.setattr(conv_caps, "CHUNK_VOTE_BYTES", 1)
    chunked, whole = _pair(_concurrent_model)
    x = np.random.default_rng(6).normal(size=(2, 6, 6, 2, 4)).astype("float32")
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(chunked(x)), keras.ops.convert_to_numpy(whole(x)), rtol=1e-6, atol=1e-6
    )


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="reads a TensorFlow graph and its allocator statistics"
)
def test_inference_chunks_have_no_loop_and_keep_about_one_chunks_votes(monkeypatch):
    """Unrolled (no While op, for the ONNX and LiteRT converters) and chained, so an inference call's
    live tensors are one chunk's routing temporaries, far below the whole vote tensor (85 MB), which
    routing it whole keeps several times over."""
    import tensorflow as tf

    batch, size, types, parents, dim = 4, 26, 8, 16, 8
    poses = tf.constant(np.random.default_rng(4).normal(size=(batch, size, size, types, dim)).astype("float32"))
    votes_bytes = batch * 24 * 24 * (9 * types) * parents * dim * 4  # 24x24 output positions: 84.9 MB
    monkeypatch.setattr(conv_caps, "CHUNK_VOTE_BYTES", votes_bytes // batch // 6)  # 6 chunks of 4 rows
    peaks = {}
    for remat in (True, False):
        layer = ConvCaps(parents, dim, kernel_size=3, strides=1, router="dynamic", remat=remat)
        layer(poses[:1])
        assert len(layer.row_chunks(False)) == (6 if remat else 1)
        predict = tf.function(lambda: layer(poses, training=False))
        ops = {op.type for op in predict.get_concrete_function().graph.get_operations()}
        assert "While" not in ops and "StatelessWhile" not in ops
        predict()
        tf.config.experimental.reset_memory_stats("CPU:0")
        held = tf.config.experimental.get_memory_info("CPU:0")["current"]
        predict()
        peaks[remat] = tf.config.experimental.get_memory_info("CPU:0")["peak"] - held
    # Whole: the routing's temporaries of every position at once, several vote tensors. Chunked: about one
    # chunk's share of those (a sixth), with the previous chunk's outputs and the gathered fields beside it: below
    # two shares. (oneDNN's kernels, on by default on AVX-512 CPUs, hold more scratch: 42.5 MB of 85 MB of votes
    # there, 32 MB without them; the whole path 183 and 236 MB.)
    assert (
        peaks[False] > 1.5 * votes_bytes and peaks[True] < 2 * peaks[False] / 6 and peaks[True] < 0.6 * votes_bytes
    ), (peaks, votes_bytes)


def test_without_recomputation_the_layer_acts_as_remat_false_and_keeps_its_config():
    layer = ConvCaps(2, 4, router="inverted_dot_product")
    layer(np.ones((1, 5, 4, 1, 4), "float32"))
    with recomputation(False):
        assert not layer.rematerializes(True) and layer.row_chunks(True) == layer.row_chunks(False) == [(0, 3)]
        assert layer.get_config()["remat"] is True
        with recomputation(True):
            assert layer.rematerializes(True)
    assert layer.rematerializes(True) and layer.row_chunks(True) == [(0, 1), (1, 2), (2, 3)]


@pytest.mark.parametrize("router", ["dynamic", "kernel", "lstm"])
def test_without_recomputation_gradients_match_the_rematerialised_ones(router):
    """The kernel and LSTM routers rematerialise their own iterations too (``remat_reading``); traced without
    recomputation, the layer and its router keep everything and compute the same outputs and gradients."""

    def build(_):  # poses and activations: every router weight reaches an output (the LSTM's activation head)
        inputs = keras.Input((5, 5, 3, 4))
        return keras.Model(inputs, ConvCaps(2, 4, kernel_size=3, router=router, name="conv")(inputs))

    on, off = _pair(build)  # both remat=True; `off` is traced without recomputation
    x = np.random.default_rng(0).normal(size=(2, 5, 5, 3, 4)).astype("float32")
    value_on, grads_on = _gradients(on, x)
    with recomputation(False):
        value_off, grads_off = _gradients(off, x)
    np.testing.assert_allclose(value_on, value_off, rtol=1e-6)
    # Rounding differs between the two programs (XLA fuses the kernel router's step differently); a small gradient
    # that is a sum with cancellations carries the rounding of its terms, so judged at the largest gradient's scale.
    scale = max(float(np.max(np.abs(g))) for g in grads_on)
    for a, b in zip(grads_on, grads_off):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6 * scale)
