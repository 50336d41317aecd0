"""Counting a traced graph's operations: floating-point operations, transcendental, copied and written elements.

:func:`op_costs` gives one :class:`OpCost` per op of a graph that runs a kernel: TensorFlow's own per-op flop
statistic where it is right, :func:`batch_matmul_flops` for the batched matrix products (whose statistic is
wrong for an adjoint operand), :func:`einsum_flops` for ``Einsum``, one flop per output element of the
:data:`ELEMENTWISE` ops and per input element of the :data:`REDUCTIONS`; a loop's body counted once per
iteration. ``benchmarks/training_step_cost.py`` counts a training step with it (its docstring says what is
counted and why); ``scale``, ``scale_counts``, ``profile_step`` and ``roofline`` use the same counter.
"""

import collections
import math

#: Transcendental op types: counted as output elements.
TRANSCENDENTAL = frozenset(
    {
        "Exp",
        "Expm1",
        "Log",
        "Log1p",
        "Tanh",
        "Sigmoid",
        "Softplus",
        "Sqrt",
        "Rsqrt",
        "Pow",
        "Erf",
        "Lgamma",
        "Digamma",
        "Sin",
        "Cos",
    }
)
#: Element-wise float op types without registered flops: one flop per output element.
ELEMENTWISE = TRANSCENDENTAL | frozenset(
    {
        "Relu",
        "ReluGrad",
        "TanhGrad",
        "SigmoidGrad",
        "SqrtGrad",
        "Abs",
        "Sign",
        "DivNoNan",
        "Xdivy",
        "Xlogy",
        "Selu",
        "Elu",
        "EluGrad",
        "Softsign",
        "LeakyRelu",
        "LeakyReluGrad",
    }
)
#: Reductions without registered flops: one per input element.
REDUCTIONS = frozenset({"Max", "Min", "Prod", "UnsortedSegmentSum"})
#: Op types that only copy data: counted as elements written (memory traffic, no flops).
COPIES = frozenset(
    {
        "Transpose",
        "Tile",
        "GatherV2",
        "ConcatV2",
        "Slice",
        "StridedSlice",
        "StridedSliceGrad",
        "BroadcastTo",
        "Fill",
        "Pad",
        "ZerosLike",
        "OnesLike",
        "SelectV2",
    }
)
#: Batched matrix products: counted by :func:`batch_matmul_flops`, not by TensorFlow's statistic (wrong for ``adj_x``).
BATCH_MATMULS = frozenset({"BatchMatMul", "BatchMatMulV2", "BatchMatMulV3"})
#: Op types that do no work when run (no flops, no copy).
FREE = frozenset(
    {
        "Const",
        "Placeholder",
        "NoOp",
        "Identity",
        "IdentityN",
        "ReadVariableOp",
        "AssignVariableOp",
        "Reshape",
        "Squeeze",
        "ExpandDims",
        "StopGradient",
        "Shape",
        "ShapeN",
    }
)


def einsum_flops(equation, shapes):
    """Floating-point operations of ``einsum(equation, *operands)`` with operands of ``shapes``.

    ``P`` is the product of the sizes of all distinct indices: ``(operands - 1) * P`` multiplications,
    plus ``P`` additions when an index is summed away (TensorFlow's convention for ``MatMul``: 2 per
    multiply-add). ``"bij,bjk->bik"``: ``2 * b * i * j * k``. ``...`` stands for the leading dimensions
    an operand has beyond its letters.
    """
    inputs, _, output = equation.replace(" ", "").partition("->")
    terms = inputs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(
            f"einsum_flops: argument `shapes` expected {len(terms)} shapes for {equation!r}, received {len(shapes)}."
        )
    sizes = {}
    for term, shape in zip(terms, shapes):
        letters = list(term.replace("...", ""))
        ellipsis = len(shape) - len(letters)
        if ellipsis < 0 or (ellipsis and "..." not in term):
            raise ValueError(f"einsum_flops: operand {term!r} of {equation!r} does not match shape {tuple(shape)}.")
        head, _, tail = term.partition("...")
        names = list(head) + [f"...{k}" for k in range(ellipsis)] + list(tail)
        for name, size in zip(names, shape):
            if size != 1 or name not in sizes:  # broadcasting: a 1 never hides a larger size
                sizes[name] = size
    kept = {name for name in sizes if name.startswith("...")} | set(output.replace("...", ""))
    product = math.prod(sizes.values())
    return (len(terms) - 1) * product + (product if set(sizes) - kept else 0)


def _elements(shape):
    """Elements of a tensor of ``shape``; 0 when the graph does not fix it (an integer shape vector
    or index, never a float tensor of a step traced at a fixed batch size)."""
    return math.prod(shape) if shape.is_fully_defined() else 0


def _fixed(op, shape):
    if not shape.is_fully_defined():
        raise ValueError(
            f"op_counts: op {op.name} ({op.type}) has shape {shape}, expected a fixed one to count its flops."
        )
    return tuple(shape)


#: One op's cost: ``flops`` (TensorFlow's own statistic when ``registered``, else this script's rule, or
#: 0), ``transcendental`` output elements, ``copied``: elements written by a :data:`COPIES` op,
#: ``written``: elements of its (first) output, whatever the op (a floor on its memory traffic),
#: ``statistic``: TensorFlow's registered flops as it gives them (``None`` where it has none; what its profiler sums).
OpCost = collections.namedtuple("OpCost", "type name flops transcendental copied written registered statistic")


#: Loop op types: their body's ops are counted once per iteration (:func:`loop_body`), the op itself does no work.
LOOPS = frozenset({"While", "StatelessWhile"})  # the memory plan's LOOP_OPS


def loop_body(op):
    """``(body graph, iterations)`` of a ``While`` op: the loop's ``maximum_iterations`` input (a constant for
    ``tf.map_fn`` and ``keras.ops.map``/``scan``, and for their gradient loops, which reuse it)."""
    import tensorflow as tf

    iterations = tf.get_static_value(op.inputs[1])
    if iterations is None:
        raise ValueError(f"op_counts: loop {op.name} has no constant iteration count to count its body by.")
    from keras_capsules.training.memory_plan import loop_body_graph

    return loop_body_graph(op), int(iterations)


def op_costs(graph):
    """An :class:`OpCost` for every op of ``graph`` that runs a kernel (all but :data:`FREE` types).

    A loop's body (:data:`LOOPS`; ``ConvCaps`` routes its rows, EM its position chunks, in one) is
    counted once per iteration, its ops named under the loop op's name (so their layer is the loop's)
    and without a ``statistic`` (TensorFlow's profiler sums the top-level graph only).

    Raises:
        ValueError: an op counted by this script's rules has a shape the graph does not fix.
    """
    from tensorflow.python.framework import ops as tf_ops

    rows = []
    for op in graph.get_operations():
        if op.type in LOOPS:
            body, iterations = loop_body(op)
            for row in op_costs(body):
                rows.append(
                    row._replace(
                        name=f"{op.name}/{row.name}",
                        flops=iterations * row.flops,
                        transcendental=iterations * row.transcendental,
                        copied=iterations * row.copied,
                        written=iterations * row.written,
                        statistic=None,
                    )
                )
            continue
        out = op.outputs[0].shape if op.outputs else None
        statistic = tf_ops.get_stats_for_node_def(graph, op.node_def, "flops").value
        flops, registered = statistic, statistic is not None and op.type not in BATCH_MATMULS
        if not registered:
            if op.type in BATCH_MATMULS:
                flops = batch_matmul_flops(op)
            elif op.type == "Einsum":
                flops = einsum_flops(op.get_attr("equation").decode(), [_fixed(op, t.shape) for t in op.inputs])
            elif op.type in ELEMENTWISE:
                flops = math.prod(_fixed(op, out))
            elif op.type in REDUCTIONS:
                flops = math.prod(_fixed(op, op.inputs[0].shape))
        transcendental = _elements(out) if op.type in TRANSCENDENTAL else 0
        written = _elements(out) if out is not None else 0
        if op.type not in FREE:
            rows.append(
                OpCost(
                    op.type,
                    op.name,
                    int(flops or 0),
                    transcendental,
                    written if op.type in COPIES else 0,
                    written,
                    registered,
                    statistic,
                )
            )
    return rows


def batch_matmul_flops(op):
    """``2 * m * k * n`` per matrix of a ``BatchMatMul*`` op's output: 2 x its output elements x the contracted
    size ``k``.

    ``k`` is ``x``'s last axis, or its second-to-last when ``adj_x``. TensorFlow's registered statistic
    reads ``transpose_a``, an attribute these ops do not have (theirs is ``adj_x``), so it takes the
    wrong axis for an adjoint ``x``: for the backward product ``c^T @ dout`` of a ``(1, in) @ (in, d)``
    routing sum it multiplies by ``in`` instead of 1.
    """
    x_shape = _fixed(op, op.inputs[0].shape)
    k = x_shape[-2] if op.get_attr("adj_x") else x_shape[-1]
    return 2 * math.prod(_fixed(op, op.outputs[0].shape)) * k


def profiler_flops(graph):
    """Total float operations of ``graph`` by TensorFlow's graph profiler (registered op types only)."""
    import tensorflow as tf

    builder = tf.compat.v1.profiler.ProfileOptionBuilder
    options = builder(builder.float_operation()).with_empty_output().build()
    return tf.compat.v1.profiler.profile(graph, options=options).total_float_ops
