"""GLOM island views (Zeng et al., Figs. 6 and 7): colours and arrows per level, written as PNG.

The inputs are the levels of one image, ``(N, K, d)`` (``glom_levels(model, images)[i]`` from
:mod:`keras_capsules.applications.agreement_glom`), or one level ``(N, d)``. Pictures need matplotlib
(the ``plots`` extra), imported only when drawing (``keras_capsules.interpret.plotting``).
"""

import numpy as np

from keras_capsules import errors
from keras_capsules.interpret import plotting
from keras_capsules.ops.patches import resolve_grid


def _levels(where, levels, grid_shape):
    levels = np.asarray(levels, dtype="float64")
    if levels.ndim == 4 and levels.shape[0] == 1:
        levels = levels[0]
    if levels.ndim == 2:
        levels = levels[:, None, :]
    if levels.ndim != 3:
        errors.fail(where, "levels", "one image's levels (N, levels, d) or one level (N, d)", f"shape {levels.shape}")
    grid = resolve_grid(where, "grid_shape", levels.shape[0], grid_shape)
    return levels, grid


def _pca(x, components):
    """Rows of ``x`` (L2-normalised first) projected on their top principal components, ``(N, components)``."""
    x = x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)
    x = x - x.mean(axis=0, keepdims=True)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    out = x @ vt[:components].T
    if out.shape[1] < components:
        out = np.pad(out, ((0, 0), (0, components - out.shape[1])))
    return out


def island_colors(levels, grid_shape=None):
    """RGB picture per level: L2-normalised embeddings projected on their first 3 principal components.

    Columns with similar embeddings (an island of agreement) get similar colours. Each component is
    scaled to [0, 1] with one common range per level, so a level where all columns agree is flat.

    Args:
        levels: ``(N, K, d)`` or ``(N, d)`` for one image (columns in row-major grid order).
        grid_shape: ``(h, w)``; ``None`` means square.

    Returns:
        ``(K, h, w, 3)`` float array in [0, 1].
    """
    levels, (h, w) = _levels("island_colors", levels, grid_shape)
    pictures = []
    for k in range(levels.shape[1]):
        rgb = _pca(levels[:, k], 3)
        span = np.abs(rgb).max()
        rgb = 0.5 + 0.5 * rgb / span if span > 1e-9 else np.full_like(rgb, 0.5)
        pictures.append(rgb.reshape(h, w, 3))
    return np.stack(pictures)


def arrow_field(levels, grid_shape=None):
    """2-D arrow per column and level: the embeddings' first 2 principal components, ``(K, h, w, 2)``."""
    levels, (h, w) = _levels("arrow_field", levels, grid_shape)
    return np.stack([_pca(levels[:, k], 2).reshape(h, w, 2) for k in range(levels.shape[1])])


def _figure(panels):
    fig = plotting.new_figure((2.6 * panels, 2.8))
    return fig, fig.subplots(1, panels, squeeze=False)[0]


def _show_image(ax, image):
    picture, cmap = plotting.display_image(image)
    ax.imshow(picture, cmap=cmap, interpolation="nearest")
    ax.set_title("input")


def _finish(fig, axes, path):
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    return plotting.save_figure(fig, path)


def plot_islands(levels, path, image=None, grid_shape=None, titles=None):
    """Writes the island view (Fig. 6): the input image and one PCA-to-RGB panel per level, as a PNG.

    Args:
        levels: ``(N, K, d)`` or ``(N, d)`` for one image.
        path: the PNG file to write.
        image: optional input image ``(H, W)``, ``(H, W, 1)`` or ``(H, W, 3)`` in [0, 1], drawn first.
        grid_shape: ``(h, w)``; ``None`` means square.
        titles: one title per level (default ``"level 1"`` ... from the bottom).

    Returns:
        ``path``.
    """
    pictures = island_colors(levels, grid_shape)
    fig, axes = _figure(len(pictures) + (image is not None))
    panels = list(axes)
    if image is not None:
        _show_image(panels.pop(0), image)
    for k, (ax, picture) in enumerate(zip(panels, pictures)):
        ax.imshow(picture, interpolation="nearest")
        ax.set_title(titles[k] if titles else f"level {k + 1}")
    return _finish(fig, axes, path)


def plot_arrows(levels, path, image=None, grid_shape=None, titles=None):
    """Writes the arrow view (Fig. 7): per level, an arrow per column (2-D PCA of its embedding) over its length.

    Aligned arrows mark an island of agreement. The background is the arrow length (``inferno``),
    as in the reference code's plot.

    Args:
        levels: ``(N, K, d)`` or ``(N, d)`` for one image.
        path: the PNG file to write.
        image: optional input image drawn first.
        grid_shape: ``(h, w)``; ``None`` means square.
        titles: one title per level.

    Returns:
        ``path``.
    """
    fields = arrow_field(levels, grid_shape)
    fig, axes = _figure(len(fields) + (image is not None))
    panels = list(axes)
    if image is not None:
        _show_image(panels.pop(0), image)
    h, w = fields.shape[1:3]
    cols, rows = np.meshgrid(np.arange(w), np.arange(h))
    for k, (ax, field) in enumerate(zip(panels, fields)):
        ax.imshow(np.linalg.norm(field, axis=-1), cmap="inferno", interpolation="nearest")
        ax.quiver(cols, rows, field[..., 0], -field[..., 1], color="white", pivot="mid", angles="xy")
        ax.set_title(titles[k] if titles else f"level {k + 1}")
    return _finish(fig, axes, path)
