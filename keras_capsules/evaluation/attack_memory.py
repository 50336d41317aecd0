"""How many images an attack's loss gradient takes at once: planned from its traced graph before it runs.

The gradient with respect to a batch of images keeps every layer's activations of the whole batch for its
backward pass: about 0.23 GB an image for ConsensusCapsNet with kernel routing at 28x28, so the batch of
256 that suits a CNN asks for 60 GB there. :func:`gradient_batch_size` (what ``batch_size=None`` of the
attacks runs, TensorFlow backend) traces the gradient at two batch sizes (no gradient runs), replays each
graph with :func:`~keras_capsules.training.memory_plan.live_tensors` and estimates the process's peak as
the training memory plan does::

    peak(b) = baseline + weights + LIVE_FACTOR x live bytes(b) + BYTES_PER_OP x ops

then takes the largest batch, at most ``largest``, whose line ``peak(b)`` stays within :data:`SHARE` of
the memory the process can use (:func:`~keras_capsules.training.memory_plan.available_bytes`). Routers
that XLA compiles are traced plain, as in the training plan; their compiled inference keeps more, which
the share leaves room for. Against the measured peak of the MNIST and Fashion-MNIST presets' gradients
(``benchmarks/attack_memory.py``, 2026-12-05) the estimate read 0.87 (ConsensusCapsNet with kernel routing,
compiled) to 1.34 (CapsNet), and 2.48 for AgreementGLOM (an overestimate: a smaller batch than would fit).
Every call of the attack has the planned shape (its last batch padded), so one graph runs, the one planned: a
second, traced with an unknown batch size, kept more per image. Other backends have no traced graph to read:
they get ``largest``.
"""

import math

import keras

#: The share of the memory the process can use that a planned batch's estimated peak may take: room for
#: compiled routers' temporaries beyond the plain graph's and for other processes meanwhile.
SHARE = 0.6
#: A planned batch is at most this (and at most the number of images).
LARGEST = 256
#: The two batches the line is drawn through.
_PROBES = (4, 8)


def batch_for(fixed_bytes: float, per_image_bytes: float, limit_bytes: float, largest: int) -> int:
    """The largest batch in ``[1, largest]`` whose ``fixed_bytes + b * per_image_bytes`` is at most ``SHARE * limit_bytes``;
    1 when none is (the attack then runs one image at a time, and says so if even that runs out of memory)."""
    room = SHARE * limit_bytes - fixed_bytes
    if per_image_bytes <= 0:
        return largest
    return max(1, min(largest, math.floor(room / per_image_bytes)))


def estimated_peak_bytes(graph_function, model, image_shape, target_spec, batch_size):
    """The estimated peak resident bytes of a process computing ``graph_function`` (``(images, targets) -> gradient``)
    on ``batch_size`` images of ``image_shape`` (TensorFlow; traced, not run)."""
    import tensorflow as tf

    from keras_capsules.ops.compile import router_compilation
    from keras_capsules.training import memory_plan

    images = tf.TensorSpec((batch_size, *image_shape), "float32")
    targets = tf.TensorSpec((batch_size, *target_spec[0]), target_spec[1])
    with router_compilation(False):  # a compiled cluster would be one opaque op to the replay
        graph = tf.function(graph_function, autograph=False).get_concrete_function(images, targets).graph
    live = memory_plan.live_tensors(graph.get_operations(), graph.outputs)
    return (
        memory_plan.PROCESS_BASELINE_BYTES
        + memory_plan.variables_bytes(model.weights)
        + memory_plan.LIVE_FACTOR * live.peak_bytes
        + memory_plan.BYTES_PER_OP * live.ops
    )


def peak_line(graph_function, model, image_shape, target_spec):
    """``(fixed bytes, bytes per image)``: the line through the estimated peaks at the two probe batches
    (:func:`estimated_peak_bytes`; TensorFlow, traced, not run)."""
    small, large = (estimated_peak_bytes(graph_function, model, image_shape, target_spec, b) for b in _PROBES)
    per_image = (large - small) / (_PROBES[1] - _PROBES[0])
    return small - _PROBES[0] * per_image, per_image


def gradient_batch_size(graph_function, model, image_shape, target_spec, images, limit_bytes=None, line=None):
    """The planned images per gradient call (see the module docstring).

    Args:
        graph_function: ``(images, targets) -> gradient`` as TensorFlow ops, or ``None`` (another backend:
            ``min(LARGEST, images)``).
        model: the model it differentiates (its weights are counted).
        image_shape: one image's ``(H, W, C)``; target_spec: one target's ``(shape, dtype)``.
        images: how many images will be attacked (the batch is at most this).
        limit_bytes: the memory the process can use (default
            :func:`~keras_capsules.training.memory_plan.available_bytes`; unknown: ``LARGEST``).
        line: a function returning :func:`peak_line` of the same arguments (a cached one, say), called only when
            the plan needs it (default: traced here).
    """
    largest = max(1, min(LARGEST, int(images)))
    if graph_function is None or keras.backend.backend() != "tensorflow":
        return largest
    from keras_capsules.training.memory_plan import available_bytes

    limit = available_bytes() if limit_bytes is None else limit_bytes
    if limit is None:
        return largest
    fixed, per_image = line() if line else peak_line(graph_function, model, image_shape, target_spec)
    return batch_for(fixed, per_image, limit, largest)
