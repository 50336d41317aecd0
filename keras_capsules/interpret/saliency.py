"""Saliency maps from coupling coefficients and capsule activations (REM eq. 16; docs/reference/rem.md#saliency-and-fc-parse-trees).

For a routing layer whose children form a grid of ``M x N`` positions and ``O`` types (primary or
convolutional capsules) and the predicted class ``j``::

    E(m, n) = (1/O) * sum_o ||u_(m,n,o)|| * c~_(m,n,o),j

then bilinear upsampling to the input size. Forward pass only, no gradients. With quantised routers
(:func:`~keras_capsules.interpret.set_quantization`) ``c~`` is the quantised coupling, as in REM.
"""

import numpy as np
from keras import ops

from keras_capsules import errors
from keras_capsules.interpret import plotting
from keras_capsules.interpret.coupling import routing_trace


def spatial(record):
    """Whether ``record`` is an FcCaps layer whose children form a grid of more than one position.

    Eq. 16 maps positions: a 1x1 grid (Efficient-CapsNet's primary capsules) gives one value per
    image, a map without spatial content.
    """
    return record.layer_type == "FcCaps" and record.grid_input and np.prod(record.input_poses.shape[1:3]) > 1


def saliency_layer(trace, layer=None):
    """The :class:`LayerRouting` used for saliency: ``layer`` or the last FcCaps layer with grid children.

    The grid must have more than one position (:func:`spatial`).
    """
    grid = "whose children form a grid of more than one position (primary or conv capsules)"
    if layer is not None:
        record = trace[layer]
        if not spatial(record):
            errors.fail(
                "interpret.saliency_layer",
                "layer",
                f"an FcCaps layer {grid}",
                f"{record.layer_type} '{layer}' with children {_children(record)}",
            )
        return record
    candidates = [r for r in trace.layers if spatial(r)]
    if not candidates:
        errors.fail(
            "interpret.saliency_layer",
            "model",
            f"a routed FcCaps layer {grid}",
            [f"{r.layer_type} '{r.name}' with children {_children(r)}" for r in trace.layers],
        )
    return candidates[-1]


def _children(record):
    """The child layout of ``record`` for messages: ``"1x1 grid of 16 types"`` or ``"64 capsules"``."""
    shape = record.input_poses.shape[1:-1]
    return f"{shape[0]}x{shape[1]} grid of {shape[2]} types" if record.grid_input else f"{shape[0]} capsules"


def saliency_from_record(record, classes, image_size):
    """Eq. 16 for one layer.

    Args:
        record: a :class:`~keras_capsules.interpret.LayerRouting` of an FcCaps layer with grid children.
        classes: ``(batch,)`` class per example (usually the predictions).
        image_size: ``(H, W)`` of the input images.

    Returns:
        ``(batch, H, W)`` float32 maps (not normalised).
    """
    coupling = record.class_coupling()  # (batch, M, N, O, classes)
    classes = np.asarray(classes).reshape(-1).astype("int64")
    chosen = np.take_along_axis(coupling, classes[:, None, None, None, None], axis=-1)[..., 0]
    lengths = np.sqrt(np.sum(np.square(record.input_poses.astype("float32")), axis=-1))
    grid_map = np.mean(lengths * chosen, axis=-1)[..., None].astype("float32")
    resized = ops.image.resize(grid_map, tuple(image_size), interpolation="bilinear")
    return np.asarray(ops.convert_to_numpy(resized))[..., 0]


def saliency_maps(model, images, layer=None, classes=None):
    """Saliency maps (eq. 16) for a batch of images.

    Args:
        model: an application model (also loaded from ``.keras``).
        images: ``(batch, H, W, C)`` in [0, 1].
        layer: the FcCaps layer to explain (default: the last one with grid children).
        classes: explain these classes instead of the predicted ones.

    Returns:
        ``(maps, trace)``: maps ``(batch, H, W)`` and the :class:`~keras_capsules.interpret.RoutingTrace`.
    """
    images = np.asarray(ops.convert_to_numpy(images))
    trace = routing_trace(model, images)
    record = saliency_layer(trace, layer)
    chosen = trace.predictions if classes is None else classes
    return saliency_from_record(record, chosen, images.shape[1:3]), trace


def plot_saliency(images, maps, path, titles=None, alpha=0.5, columns=8):
    """Writes a PNG grid: each image with its saliency map overlaid (jet colormap).

    Args:
        images: ``(batch, H, W, C)`` in [0, 1].
        maps: ``(batch, H, W)`` from :func:`saliency_maps`.
        path: output ``.png`` path.
        titles: optional one string per image.
        alpha: opacity of the overlay.
        columns: images per row.

    Returns:
        ``path``.
    """
    images, maps = np.asarray(images), np.asarray(maps)
    count = len(images)
    columns = max(1, min(columns, count))
    rows = -(-count // columns)
    figure = plotting.new_figure((2.0 * columns, 2.2 * rows))
    for i in range(count):
        axis = figure.add_subplot(rows, columns, i + 1)
        shown, cmap = plotting.display_image(images[i])
        axis.imshow(shown, cmap=cmap)
        axis.imshow(maps[i], cmap="jet", alpha=alpha, interpolation="bilinear")
        axis.set_axis_off()
        if titles is not None:
            axis.set_title(titles[i], fontsize=8)
    return plotting.save_figure(figure, path)
