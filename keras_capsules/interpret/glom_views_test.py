"""GLOM island and arrow views."""

import sys

import numpy as np
import pytest

from keras_capsules.interpret import glom_views


def _two_islands(rng, h=4, w=6, d=8):
    a, b = rng.normal(size=d), rng.normal(size=d)
    grid = np.where((np.arange(w) < w // 2)[None, :, None], a, b) * np.ones((h, w, d))
    return grid.reshape(h * w, d) + 0.01 * rng.normal(size=(h * w, d))


def test_colours_separate_islands_and_flat_levels():
    rng = np.random.default_rng(0)
    levels = np.stack([rng.normal(size=(24, 8)), _two_islands(rng)], axis=1)  # (N, K, d)
    colours = glom_views.island_colors(levels, grid_shape=(4, 6))
    assert colours.shape == (2, 4, 6, 3) and colours.min() >= 0 and colours.max() <= 1
    top = colours[1]
    inside = np.abs(top[:, :3] - top[:1, :1]).max()
    across = np.abs(top[:, 3:].mean((0, 1)) - top[:, :3].mean((0, 1))).max()
    assert across > 10 * inside  # one colour per island
    flat = glom_views.island_colors(np.ones((16, 3)))
    np.testing.assert_allclose(flat, 0.5)
    assert glom_views.arrow_field(levels[None], grid_shape=(4, 6)).shape == (2, 4, 6, 2)
    with pytest.raises(ValueError, match="island_colors.*grid_shape"):
        glom_views.island_colors(levels, grid_shape=(5, 5))


def test_pngs_are_written(tmp_path):
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(1)
    levels = np.stack([rng.normal(size=(16, 5)), _two_islands(rng, 4, 4, 5)], axis=1)
    image = rng.uniform(size=(16, 16, 1))
    for fn, name in ((glom_views.plot_islands, "islands.png"), (glom_views.plot_arrows, "arrows.png")):
        path = fn(levels, str(tmp_path / name), image=image, titles=["bottom", "top"])
        with open(path, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_clear_error_without_matplotlib(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match="needs matplotlib"):
        glom_views.plot_islands(np.ones((4, 2, 3)), str(tmp_path / "x.png"))
