"""The most memory a traced graph's tensors hold at once when its ops run one at a time in creation order
(:func:`live_tensors`; :mod:`~keras_capsules.training.memory_plan` describes the model of memory it replays)."""

import collections
import dataclasses
import math

#: Ops whose outputs share their first input's memory (``IdentityN``: output ``i`` shares input ``i``).
VIEW_OPS = frozenset(
    {
        "Identity",
        "IdentityN",
        "Reshape",
        "Squeeze",
        "ExpandDims",
        "StopGradient",
        "Snapshot",
        "PreventGradient",
        "EnsureShape",
        "CheckNumerics",
    }
)


#: Ops whose outputs are the variables' own memory (counted as the weights).
VARIABLE_OPS = frozenset({"ReadVariableOp", "VarHandleOp"})


#: Loop ops: their body is replayed on its own, its peak added while the loop runs (see :func:`live_tensors`).
LOOP_OPS = frozenset({"While", "StatelessWhile"})


def tensor_bytes(tensor):
    """Bytes of a traced tensor of fixed shape; 0 for handles, strings and shapes the graph leaves open."""
    dtype = tensor.dtype
    if dtype.name in ("resource", "variant", "string") or not tensor.shape.is_fully_defined():
        return 0
    return math.prod(tensor.shape) * dtype.size


@dataclasses.dataclass(frozen=True)
class LiveTensors:
    """The most memory a graph's tensors hold at once when its ops run one at a time in creation order.

    Attributes:
        peak_bytes: that most.
        ops: the ops in the graph.
        at_peak: ``{op name: bytes}`` of the buffers live at the peak, by the op that made them.
    """

    peak_bytes: int
    ops: int
    at_peak: dict


def loop_body_graph(op):
    """The graph of a loop op's (:data:`LOOP_OPS`) body, from its graph's function library."""
    return op.graph._get_function(op.get_attr("body").name).graph


def _list_bytes(op, index):
    """Bytes held by the tensor list that output ``index`` of ``op`` is (0 for any other output, and for an
    iteration count the graph leaves open): a loop's list the body fills one element per iteration, the
    map's outputs (``TensorListSetItem``) or the gradient's accumulators (``TensorListPushBack``: what the
    gradient loop reads), the iterations (the loop's constant ``maximum_iterations``) times an element's
    bytes; a list made from a tensor (``TensorListFromTensor``, a map's inputs) that tensor's bytes."""
    import tensorflow as tf

    if op.type == "TensorListFromTensor":
        return tensor_bytes(op.inputs[0])
    if op.type not in LOOP_OPS:
        return 0
    filled = loop_body_graph(op).outputs[index].op
    while filled.type == "Identity":
        filled = filled.inputs[0].op
    element = {"TensorListPushBack": 1, "TensorListSetItem": 2}.get(filled.type)
    iterations = tf.get_static_value(op.inputs[1])
    if element is None or iterations is None:
        return 0
    return int(iterations) * tensor_bytes(filled.inputs[element])


def _loop_body_peak(op):
    """The most bytes one iteration of a loop op (``While``) holds at once: its body replayed (:func:`live_tensors`); 0 for other ops."""
    if op.type not in LOOP_OPS:
        return 0
    body = loop_body_graph(op)
    return live_tensors(body.get_operations(), body.outputs).peak_bytes


def live_tensors(operations, outputs=()) -> LiveTensors:
    """Replays ``operations`` (a graph's, in creation order) and finds the most bytes live at once.

    An op's outputs are allocated when it runs, with its inputs still live; a buffer is freed once every
    consumer of every tensor that shares it has run, except the ``outputs`` (kept to the end).
    Views (:data:`VIEW_OPS`) share their input's buffer; variable reads (:data:`VARIABLE_OPS`) hold none.
    A loop (:data:`LOOP_OPS`: ``ConvCaps`` routes its rows in one) adds, while it runs, its body's own
    peak once (its iterations run one after another); what it keeps across iterations for the gradient
    (tensor lists, e.g. each row's inputs: :func:`_list_bytes`) is live from the loop to the
    gradient loop that reads it, as are the lists of a map's inputs and outputs. An input made by an op created later (a loop's gradient accumulators,
    which TensorFlow adds after the loop) is its own buffer.

    Args:
        operations: the ops, each with ``name``, ``type``, ``inputs`` and ``outputs`` (``tf.Operation``).
        outputs: tensors alive at the end (the step's results).
    """
    buffer_of, size, made_by, uses = {}, {}, {}, collections.Counter()

    def own_buffer(tensor, op_name, bytes_):
        buffer_of[tensor.name] = tensor.name
        size[tensor.name], made_by[tensor.name] = bytes_, op_name

    def output_bytes(op, index):
        tensor = op.outputs[index]
        return _list_bytes(op, index) if tensor.dtype.name == "variant" else tensor_bytes(tensor)

    for op in operations:
        for index, tensor in enumerate(op.outputs):
            if tensor.name in buffer_of:  # already an input of an earlier op, its own buffer
                made_by[tensor.name], size[tensor.name] = op.name, output_bytes(op, index)
                continue
            if (
                op.type in VIEW_OPS
                and op.inputs
                and op.inputs[index if op.type == "IdentityN" else 0].name in buffer_of
            ):
                buffer_of[tensor.name] = buffer_of[op.inputs[index if op.type == "IdentityN" else 0].name]
            elif op.type in VARIABLE_OPS:
                buffer_of[tensor.name] = None
            else:
                own_buffer(tensor, op.name, output_bytes(op, index))
        for tensor in op.inputs:
            if tensor.name not in buffer_of:
                own_buffer(tensor, tensor.name, tensor_bytes(tensor))  # its maker, once it comes, names it and sizes it
            if buffer_of[tensor.name] is not None:
                uses[buffer_of[tensor.name]] += 1
    kept = {buffer_of[t.name] for t in outputs}
    live, total, peak, at_peak = {}, 0, 0, {}
    for op in operations:
        for tensor in op.outputs:
            if buffer_of[tensor.name] == tensor.name and tensor.name not in live:
                live[tensor.name] = size[tensor.name]
                total += size[tensor.name]
        body = _loop_body_peak(op)
        if total + body > peak:
            peak, at_peak = total + body, dict(live)
            if body:
                at_peak[op.name + "/body"], made_by[op.name + "/body"] = body, op.name
        for tensor in op.inputs:
            if buffer_of[tensor.name] is not None:
                uses[buffer_of[tensor.name]] -= 1
        for tensor in (*op.inputs, *op.outputs):
            buffer = buffer_of[tensor.name]
            if buffer in live and uses[buffer] == 0 and buffer not in kept:
                total -= live.pop(buffer)
    by_op = collections.Counter()
    for buffer, count in at_peak.items():
        by_op[made_by[buffer]] += count
    return LiveTensors(peak, len(operations), dict(by_op))
