"""Deterministic affine transforms of image batches ``(N, H, W, C)`` in [0, 1] (NumPy, any backend).

Every transform is one call of :func:`affine`: each output pixel samples the input bilinearly at the
inverse-mapped point, and points outside the image read 0 (zero fill). The output has the input's size.

Conventions (display coordinates, as the image is drawn with row 0 at the top): pixel ``(row i,
column j)`` is centred on ``(i, j)``; the image centre is ``((H - 1) / 2, (W - 1) / 2)`` (a pixel for odd
sizes); ``x = j - (W - 1) / 2`` points right and ``y = (H - 1) / 2 - i`` points up. Then

- ``rotate(images, +90)`` turns the content counter-clockwise: ``np.rot90(image, 1, axes=(0, 1))``;
- ``scale(images, 2)`` magnifies the content about the centre (``0.5`` shrinks it);
- ``shear(images, k)`` maps ``(x, y)`` to ``(x + k y, y)``: content above the centre moves right, below it
  left, so an upright stroke leans forward like italics;
- ``translate(images, dx, dy)`` moves the content ``dx`` columns right and ``dy`` rows down, as
  ``np.roll(image, (dy, dx), axis=(0, 1))`` with zero fill instead of wrap-around.

Magnitudes are a scalar (the whole batch) or one value per image, shape ``(N,)``.
"""

import numpy as np

#: Sampling points closer than this to a pixel centre snap to it, so that 90-degree rotations and
#: integer shifts copy pixels exactly instead of blending in float64 round-off.
_SNAP_DECIMALS = 9


def _check_images(function, images):
    images = np.asarray(images)
    if images.ndim != 4:
        raise ValueError(
            f"{function}: argument `images` expected a batch of shape (N, H, W, C), received shape {images.shape}."
        )
    return images.astype("float32", copy=False)


def _per_image(function, argument, value, count):
    """``value`` (a scalar or one per image) as a float64 ``(count,)`` array."""
    value = np.asarray(value, dtype="float64")
    if value.ndim == 0:
        value = np.full((count,), float(value))
    if value.shape != (count,):
        raise ValueError(
            f"{function}: argument `{argument}` expected a number or one per image, shape ({count},), received shape {value.shape}."
        )
    if not np.all(np.isfinite(value)):
        raise ValueError(f"{function}: argument `{argument}` expected finite numbers, received {value}.")
    return value


def affine(images, matrix, offset=(0.0, 0.0)):
    """Moves the content of each image by ``p -> matrix @ p + offset`` in display coordinates (module docstring).

    Args:
        images: ``(N, H, W, C)``.
        matrix: ``(2, 2)`` or one per image ``(N, 2, 2)``, acting on ``(x, y)``; invertible.
        offset: ``(2,)`` or ``(N, 2)``: ``(x, y)`` displacement in pixels (x right, y up).

    Returns:
        float32 ``(N, H, W, C)``: bilinear samples, 0 outside the input.
    """
    images = _check_images("affine", images)
    count, height, width, channels = images.shape
    matrix = np.asarray(matrix, dtype="float64")
    offset = np.asarray(offset, dtype="float64")
    if matrix.shape not in ((2, 2), (count, 2, 2)) or offset.shape not in ((2,), (count, 2)):
        raise ValueError(
            f"affine: arguments `matrix` and `offset` expected shapes (2, 2) or ({count}, 2, 2) and (2,) or ({count}, 2), "
            f"received {matrix.shape} and {offset.shape}."
        )
    if np.any(np.abs(np.linalg.det(matrix)) < 1e-12):
        raise ValueError(f"affine: argument `matrix` expected invertible matrices, received {matrix}.")
    inverse = np.broadcast_to(np.linalg.inv(matrix), (count, 2, 2))
    offset = np.broadcast_to(offset, (count, 2))
    centre_row, centre_col = (height - 1) / 2.0, (width - 1) / 2.0
    rows, cols = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")
    points = np.stack([cols.ravel() - centre_col, centre_row - rows.ravel()], axis=-1)  # (H*W, 2): (x, y)
    source = np.einsum("nij,npj->npi", inverse, points[None] - offset[:, None])  # (N, H*W, 2)
    source = np.round(source, _SNAP_DECIMALS)
    source_row, source_col = centre_row - source[..., 1], source[..., 0] + centre_col
    row0, col0 = np.floor(source_row), np.floor(source_col)
    row_frac, col_frac = source_row - row0, source_col - col0
    flat = images.reshape(count, height * width, channels)
    out = np.zeros((count, height * width, channels), dtype="float64")
    for d_row, d_col, weight in (
        (0, 0, (1 - row_frac) * (1 - col_frac)),
        (0, 1, (1 - row_frac) * col_frac),
        (1, 0, row_frac * (1 - col_frac)),
        (1, 1, row_frac * col_frac),
    ):
        row, col = row0 + d_row, col0 + d_col
        inside = (row >= 0) & (row < height) & (col >= 0) & (col < width)
        index = np.where(inside, row * width + col, 0).astype("int64")
        out += np.take_along_axis(flat, index[..., None], axis=1) * np.where(inside, weight, 0.0)[..., None]
    return out.reshape(count, height, width, channels).astype("float32")


def rotate(images, degrees):
    """Rotates counter-clockwise (as displayed) by ``degrees`` about the centre: ``(N, H, W, C) -> (N, H, W, C)``."""
    images = _check_images("rotate", images)
    angle = np.radians(_per_image("rotate", "degrees", degrees, len(images)))
    cos, sin = np.cos(angle), np.sin(angle)
    return affine(images, np.stack([np.stack([cos, -sin], -1), np.stack([sin, cos], -1)], -2))


def scale(images, factor):
    """Scales the content by ``factor`` (> 0; above 1 magnifies) about the centre: ``(N, H, W, C) -> (N, H, W, C)``."""
    images = _check_images("scale", images)
    factor = _per_image("scale", "factor", factor, len(images))
    if np.any(factor <= 0):
        raise ValueError(f"scale: argument `factor` expected positive numbers, received {factor}.")
    return affine(images, factor[:, None, None] * np.eye(2))


def shear(images, factor):
    """Shears horizontally, ``(x, y) -> (x + factor * y, y)`` about the centre: ``(N, H, W, C) -> (N, H, W, C)``."""
    images = _check_images("shear", images)
    factor = _per_image("shear", "factor", factor, len(images))
    ones, zeros = np.ones_like(factor), np.zeros_like(factor)
    return affine(images, np.stack([np.stack([ones, factor], -1), np.stack([zeros, ones], -1)], -2))


def translate(images, dx, dy):
    """Moves the content ``dx`` pixels right and ``dy`` pixels down: ``(N, H, W, C) -> (N, H, W, C)``."""
    images = _check_images("translate", images)
    dx, dy = _per_image("translate", "dx", dx, len(images)), _per_image("translate", "dy", dy, len(images))
    return affine(images, np.eye(2), np.stack([dx, -dy], -1))
