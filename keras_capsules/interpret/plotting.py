"""Lazy matplotlib access for the PNG views (matplotlib is the optional ``plots`` extra).

Figures are drawn with ``matplotlib.figure.Figure`` directly (no ``pyplot``), so writing PNGs never
changes the user's matplotlib backend or global state.
"""

import os

import numpy as np


def require_matplotlib():
    """Returns ``matplotlib.figure.Figure``; raises ``ImportError`` with an install hint without matplotlib."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(
            "keras_capsules.interpret: drawing PNG views needs matplotlib, which is not installed. "
            "Install it with `pip install 'keras-capsules[plots]'` (or `pip install matplotlib`)."
        ) from None
    return Figure


def new_figure(figsize):
    """A new ``matplotlib.figure.Figure``; raises ``ImportError`` with an install hint without matplotlib."""
    return require_matplotlib()(figsize=figsize)


def colormap(name):
    """A matplotlib colormap by name."""
    from matplotlib import colormaps

    return colormaps[name]


def save_figure(figure, path):
    """Writes ``figure`` to ``path`` as PNG (creating the folder) and returns the path."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    figure.savefig(path, format="png", dpi=100, bbox_inches="tight")
    return path


def display_image(image):
    """An image ``(H, W, C)`` in [0, 1] as something ``imshow`` draws: grey for 1 channel (first channel of 2), RGB for 3."""
    image = np.clip(np.asarray(image, dtype="float32"), 0.0, 1.0)
    if image.ndim == 3 and image.shape[-1] == 3:
        return image, None
    if image.ndim == 3:
        image = image[..., 0]
    return image, "gray"
