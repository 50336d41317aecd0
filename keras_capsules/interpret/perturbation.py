"""The capsule-dimension perturbation grid (Sabour et al. 2017, Fig. 4): sweep each pose dimension of the winning capsule and decode.

Each row of the grid is one dimension ``d`` of the chosen class capsule's pose ``v``; each column adds
one offset ``delta`` to ``v_d`` (the other capsules masked to zero, as in training), and the
model's reconstruction decoder turns the result into an image. Rows whose images change show what
that dimension encodes (stroke width, skew, scale, ...).
"""

import keras
import numpy as np

from keras_capsules import errors
from keras_capsules.interpret import plotting

#: Offsets of the paper's figure: -0.25 to 0.25 in steps of 0.05.
DEFAULT_OFFSETS = tuple(np.round(np.arange(-0.25, 0.2501, 0.05), 2))


def _pose_model(model, layer):
    names = [item.name for item in model.layers]
    if layer not in names:
        errors.fail(
            "dimension_perturbations", "layer", f"the name of the class-capsule layer of the model ({names})", layer
        )
    poses = keras.tree.flatten(model.get_layer(layer).output)[0]
    if len(poses.shape) != 3:
        errors.fail(
            "dimension_perturbations",
            "layer",
            "a layer whose first output is poses (batch, classes, capsule_dim)",
            f"{layer} with shape {poses.shape}",
        )
    return keras.Model(model.inputs, [keras.tree.flatten(model.outputs)[0], poses])


def dimension_perturbations(model, image, offsets=DEFAULT_OFFSETS, capsule=None, layer="class_caps"):
    """Decoded images of the chosen class capsule with each pose dimension swept through ``offsets``.

    Args:
        model: an application built with ``reconstruction=True`` (it has a ``decoder``).
        image: one image ``(H, W, C)`` in the model's input range.
        offsets: values added to one pose dimension at a time (default -0.25 ... 0.25 by 0.05).
        capsule: class capsule to perturb (default: the highest-scoring class).
        layer: name of the class-capsule layer.

    Returns:
        ``(grid, capsule)``: ``grid`` of shape ``(capsule_dim, len(offsets), H, W, C)``, and the
        class index whose capsule was perturbed.

    Raises:
        ValueError: the model has no decoder, the image has the wrong shape, or ``capsule`` is out of range.
    """
    decoder = getattr(model, "decoder", None)
    if decoder is None:
        errors.fail(
            "dimension_perturbations",
            "model",
            "a model with a reconstruction decoder (build it with reconstruction=True)",
            model.name,
        )
    image = np.asarray(image, dtype="float32")
    expected = tuple(model.inputs[0].shape[1:])
    if image.shape != expected:
        errors.fail("dimension_perturbations", "image", f"one image of shape {expected}", f"shape {image.shape}")
    scores, poses = _pose_model(model, layer)(image[None], training=False)
    scores, poses = keras.ops.convert_to_numpy(scores)[0], keras.ops.convert_to_numpy(poses)[0]
    classes, dim = poses.shape
    if capsule is None:
        capsule = int(np.argmax(scores))
    if not 0 <= int(capsule) < classes:
        errors.fail("dimension_perturbations", "capsule", f"a class index in [0, {classes})", capsule)
    offsets = np.asarray(offsets, dtype="float32")
    # One masked pose vector per (dimension, offset): only the chosen capsule is non-zero.
    masked = np.zeros((dim, len(offsets), classes, dim), dtype="float32")
    masked[:, :, capsule, :] = poses[capsule]
    masked[np.arange(dim), :, capsule, np.arange(dim)] += offsets
    images = keras.ops.convert_to_numpy(decoder(masked.reshape(dim * len(offsets), classes * dim), training=False))
    return images.reshape((dim, len(offsets)) + images.shape[1:]), int(capsule)


def plot_dimension_perturbations(grid, path, offsets=DEFAULT_OFFSETS, title=None):
    """Writes the perturbation grid as a PNG: one row per pose dimension, one column per offset.

    Args:
        grid: ``(capsule_dim, len(offsets), H, W, C)`` from :func:`dimension_perturbations`.
        path: the PNG file to write.
        offsets: the column offsets (for the labels).
        title: optional figure title.

    Returns:
        ``path``.
    """
    grid = np.asarray(grid)
    if grid.ndim != 5 or grid.shape[1] != len(offsets):
        errors.fail(
            "plot_dimension_perturbations",
            "grid",
            f"an array (capsule_dim, {len(offsets)}, H, W, C)",
            f"shape {grid.shape}",
        )
    rows, cols = grid.shape[:2]
    figure = plotting.new_figure((0.55 * cols + 0.6, 0.55 * rows + 0.6))
    axes = figure.subplots(rows, cols, squeeze=False)
    for r in range(rows):
        for c in range(cols):
            picture, cmap = plotting.display_image(grid[r, c])
            ax = axes[r, c]
            ax.imshow(picture, cmap=cmap, interpolation="nearest", vmin=0.0, vmax=1.0)
            ax.set_xticks([])
            ax.set_yticks([])
            if c == 0:
                ax.set_ylabel(str(r), rotation=0, labelpad=8, fontsize=7)
            if r == rows - 1:
                ax.set_xlabel(f"{offsets[c]:+.2f}", fontsize=6)
    if title:
        figure.suptitle(title, fontsize=9)
    figure.subplots_adjust(wspace=0.05, hspace=0.05)
    return plotting.save_figure(figure, path)
