"""benchmarks/training_step_cost.py counts a training step's operations correctly: the einsum rule,
TensorFlow's per-op statistics, transcendental elements and the attribution of backward ops to layers,
against hand-computed counts."""

import keras
import pytest
import tensorflow as tf

from benchmarks import op_counts
from benchmarks import training_step_cost as cost


@pytest.mark.parametrize(
    "equation, shapes, expected",
    [
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], 2 * 2 * 3 * 4 * 5),  # a batched matmul: 2 per multiply-add
        ("abd,abc->abcd", [(2, 3, 4), (2, 3, 5)], 2 * 3 * 4 * 5),  # an outer product: one multiply each
        ("...ij,jk->...ik", [(7, 2, 3), (3, 4)], 2 * 7 * 2 * 3 * 4),  # the ellipsis is a batch index
        ("bij,bjk->bik", [(1, 3, 4), (2, 4, 5)], 2 * 2 * 3 * 4 * 5),  # a broadcast 1 takes the other size
        ("ij->i", [(3, 4)], 3 * 4),  # a sum: one addition per element
    ],
)
def test_einsum_flops_hand_cases(equation, shapes, expected):
    assert op_counts.einsum_flops(equation, shapes) == expected


def test_einsum_flops_rejects_a_shape_that_does_not_fit():
    with pytest.raises(ValueError, match="einsum_flops.*'bij'"):
        op_counts.einsum_flops("bij,bjk->bik", [(2, 3), (2, 4, 5)])


def test_op_costs_matmul_einsum_and_transcendentals():
    @tf.function
    def f(a, b):
        product = tf.linalg.matmul(a, b)  # (2, 3) @ (3, 4): 2 * 2 * 3 * 4 flops
        return tf.exp(product), tf.einsum("ij,jk->ik", a, b), tf.transpose(product)

    graph = f.get_concrete_function(tf.TensorSpec((2, 3)), tf.TensorSpec((3, 4))).graph
    rows = {row.type: row for row in op_counts.op_costs(graph)}
    assert rows["MatMul"].flops == 48 and rows["MatMul"].registered
    assert rows["Einsum"].flops == 48 and not rows["Einsum"].registered
    assert (rows["Exp"].flops, rows["Exp"].transcendental) == (8, 8)
    assert (rows["Transpose"].flops, rows["Transpose"].copied) == (0, 8)
    assert op_counts.profiler_flops(graph) == sum(row.flops for row in rows.values() if row.registered) == 48


def test_a_loops_body_counts_once_per_iteration_forward_and_backward():
    weight = tf.Variable(tf.ones((3,)))

    @tf.function
    def f(x):  # 5 rows of (4, 3): exp of 12 elements each, in a map_fn loop, and its gradient loop
        with tf.GradientTape() as tape:
            total = tf.reduce_sum(tf.map_fn(lambda row: tf.reduce_sum(tf.exp(row * weight)), x, parallel_iterations=1))
        return tape.gradient(total, weight)

    rows = op_counts.op_costs(f.get_concrete_function(tf.TensorSpec((5, 4, 3))).graph)
    exps = [row for row in rows if row.type == "Exp"]
    assert [(row.flops, row.transcendental) for row in exps] == [(5 * 12, 5 * 12)]  # the forward loop's 5 iterations
    assert all(row.name.startswith("map/while/") and row.statistic is None for row in exps)
    assert not [row for row in rows if row.type in op_counts.LOOPS]
    backward_muls = [row for row in rows if row.type == "Mul" and "while_grad" in row.name]
    assert backward_muls and all(row.flops % 5 == 0 for row in backward_muls)  # the gradient loop's body, 5 times


def test_backward_matmuls_count_for_their_forward_layer():
    inputs = keras.Input((4,))
    hidden = keras.layers.Dense(3, name="first")(inputs)
    model = keras.Model(inputs, keras.layers.Dense(2, name="second")(hidden))
    graph, owners = cost.train_step_graph(model, lambda y, scores: keras.ops.mean(scores**2), batch=5)
    scopes = cost.scope_owners(owners)
    matmul_flops = {}
    for row in op_counts.op_costs(graph):
        if row.type == "MatMul":
            owner = cost.owner_of(row.name, owners, scopes)
            matmul_flops[owner] = matmul_flops.get(owner, 0) + row.flops
    # first: forward and kernel gradient (the input needs none), 2 * 5 * 4 * 3 each;
    # second: forward, kernel gradient and input gradient, 2 * 5 * 3 * 2 each.
    assert matmul_flops == {"first": 2 * 120, "second": 3 * 60}


def test_batch_matmul_flops_read_the_adjoint_operand():
    @tf.function
    def f(a, b):
        # a^H @ b: (2, 5, 3)^H @ (2, 5, 4) -> (2, 3, 4), contracting the 5: 2 * 2 * 3 * 4 * 5 flops.
        return tf.linalg.matmul(a, b, adjoint_a=True), tf.linalg.matmul(a, a, adjoint_b=True)

    graph = f.get_concrete_function(tf.TensorSpec((2, 5, 3)), tf.TensorSpec((2, 5, 4))).graph
    rows = sorted((row for row in op_counts.op_costs(graph) if row.type == "BatchMatMulV2"), key=lambda row: row.name)
    assert [row.flops for row in rows] == [2 * 2 * 3 * 4 * 5, 2 * 2 * 5 * 5 * 3]  # a @ a^H: (2, 5, 3) @ (2, 3, 5)
    # TensorFlow's own statistic takes a's last axis (3) as the contracted one for a^H @ b (right for a @ a^H).
    assert [row.statistic for row in rows] == [2 * 2 * 3 * 4 * 3, 2 * 2 * 5 * 5 * 3] and not rows[0].registered
    assert op_counts.profiler_flops(graph) == sum(row.statistic for row in rows)


def test_matrix_capsnet_matrix_products_match_a_hand_count():
    """Issue 52 quoted 40 GFLOP per image for MatrixCapsNet's training step at 32x32x3: the backward
    products of the routing sums were counted ``in_caps`` times over. Here every batched matrix product
    of a small MatrixCapsNet's step, against multiply-adds counted from its layer shapes."""
    from keras_capsules.applications import MatrixCapsNet

    batch, p, iterations, classes = 2, 4, 3, 3
    model = MatrixCapsNet(input_shape=(20, 20, 1), classes=classes, variant="small")  # grids 10x10 -> 4x4 -> 2x2
    graph, _ = cost.train_step_graph(model, lambda y, scores: keras.ops.mean(scores**2), batch)
    counted = sum(row.flops for row in op_counts.op_costs(graph) if row.type == "BatchMatMulV2")

    routing_products = (
        p * p * (2 * iterations + iterations - 1)
    )  # per child-parent pair: mean and variance per M-step, one E-step agreement between
    # ConvCaps (EM across positions): each chunk's votes (p^3 per pair) made anew in every iteration; every product
    # of a chunk step runs forward, again in the backward pass (rematerialised) and twice more for its two gradients.
    conv = sum(
        4 * batch * positions * children * 16 * (iterations * p**3 + routing_products)
        for positions, children in ((4 * 4, 9 * 8), (2 * 2, 9 * 16))
    )
    # Class capsules: 2x2 positions x 16 types -> classes, votes once; forward and two gradients (no remat).
    fc = 3 * batch * (2 * 2 * 16) * classes * (p**3 + routing_products)
    assert counted == 2 * (conv + fc)  # 2 flops per multiply-add


def test_a_router_compiled_by_xla_is_counted_as_its_plain_graph():
    """A compiled router is one XLA call op in the traced step; the count traces it plain, so its exponentials
    and cosines are counted: Q x d of each per child, parent and kernel evaluation."""
    from keras_capsules import layers
    from keras_capsules.routing import KernelRouter

    batch, in_caps, out_caps, dim, q = 2, 6, 3, 4, 2

    def counts(jit_compile):
        inputs = keras.Input((in_caps, 8))
        router = KernelRouter(iterations=1, num_components=q, jit_compile=jit_compile)
        poses, _ = layers.FcCaps(out_caps, dim, router=router)(inputs)
        graph, _ = cost.train_step_graph(keras.Model(inputs, poses), lambda y, p: keras.ops.mean(p**2), batch)
        return {t: sum(r.transcendental for r in op_counts.op_costs(graph) if r.type == t) for t in ("Exp", "Cos")}

    compiled, plain = counts(True), counts(False)
    assert compiled == plain
    # one kernel evaluation forward and one recomputed in the backward pass (the router rematerialises it)
    assert plain["Cos"] == 2 * batch * out_caps * in_caps * q * dim
