"""``affine_mnist``: MNIST digits under random affine transforms on 40x40, an affNIST-style set generated here.

This is **not affNIST itself** (Tieleman 2013, https://www.cs.toronto.edu/~tijmen/affNIST/, read by the
``affnist`` dataset from its official files): it is generated from MNIST with affNIST's kind of transform,
for the affNIST experiment of Sabour et al. (2017) when the official files are absent (train on
``expanded_mnist``, test here). Each 28x28 digit is zero-padded by 6 px to 40x40 (affNIST's untransformed,
centred version) and its content moved by ``p -> A p + t`` about the canvas centre, in display coordinates
(``x`` right, ``y`` up, as in :mod:`keras_capsules.evaluation.transforms`), with
``A = rotation(theta) @ [[1, shear], [0, 1]] @ diag(scale_x, scale_y)``, each drawn uniformly:

- ``theta`` in [-20, 20] degrees (counter-clockwise as displayed); ``shear`` in [-0.2, 0.2];
- ``scale_x`` and ``scale_y`` independently in [0.8, 1.2];
- ``t`` per axis over the offsets that keep the ink's bounding box inside the canvas: the squares of the
  digit's non-zero pixels, mapped by ``A``, stay within the 40x40 image (a digit whose mapped box is wider
  than the canvas is centred on that axis instead; none of MNIST's 70,000 is, with the default seed).

The ranges are the ones quoted for affNIST (rotation up to 20 degrees, shear up to 0.2, per-axis scale
0.8 to 1.2, translation keeping the digit in the image); the copy of the affNIST page available when this
module was written describes the set but not these numbers, so they are not checked against
Tieleman's generator (docs/datasets.md, "affine_mnist").

Determinism: example ``i`` uses row ``i`` of six uniforms from NumPy's ``Philox(transform_seed)``
(option ``transform_seed``, default :data:`SEED`), so the parameters are the same on every call and
machine, and the first ``k`` examples do not depend on how many are generated; ``load``'s ``seed`` only
shuffles. Pixels: TensorFlow's bilinear sampler (``ImageProjectiveTransformV3``, zero fill, always on the CPU),
rounded to ``uint8`` as the other MNIST sets.
"""

import os

import numpy as np
import tensorflow as tf

from keras_capsules.datasets.affnist import FILE_STEMS
from keras_capsules.datasets.registry import DatasetInfo, get_info, local_roots, register_dataset, resolve_arrays

#: Uniform ranges ``(low, high)``: rotation in degrees, shear factor, scale per axis.
ROTATION = (-20.0, 20.0)
SHEAR = (-0.2, 0.2)
SCALE = (0.8, 1.2)
#: The default ``transform_seed`` of ``affine_mnist``.
SEED = 0
CANVAS = 40
#: The digit's margin on the canvas before the transform: (40 - 28) / 2.
PAD = 6
#: The ``eval_on`` dataset name of the affNIST experiment: see :func:`evaluation_dataset`.
AFFNIST_OR_GENERATED = "affnist|affine_mnist"


def _check_digits(function, images):
    images = np.asarray(images)
    if images.ndim != 4 or images.shape[1:3] != (CANVAS - 2 * PAD,) * 2:
        raise ValueError(
            f"affine_mnist.{function}: argument `images` expected shape (N, 28, 28, C), received shape {images.shape}."
        )
    return images


def ink_box(images):
    """The bounding box of each digit's non-zero pixel squares on the 40x40 canvas (display coordinates).

    Args:
        images: ``(N, 28, 28, C)``, placed with a 6 px margin.

    Returns:
        float64 ``(N, 4, 2)``: the box's corners ``(x, y)``, ``x`` right and ``y`` up from the canvas centre
        (an image without ink gets the whole 28x28 square).
    """
    ink = np.any(_check_digits("ink_box", images) > 0, axis=-1)  # (N, 28, 28)
    rows, cols = ink.any(axis=2), ink.any(axis=1)
    side = ink.shape[1]
    first_row, last_row = rows.argmax(1), side - 1 - rows[:, ::-1].argmax(1)
    first_col, last_col = cols.argmax(1), side - 1 - cols[:, ::-1].argmax(1)
    empty = ~rows.any(1)
    first_row, first_col = np.where(empty, 0, first_row), np.where(empty, 0, first_col)
    last_row, last_col = np.where(empty, side - 1, last_row), np.where(empty, side - 1, last_col)
    centre = (CANVAS - 1) / 2.0
    left, right = first_col + PAD - 0.5 - centre, last_col + PAD + 0.5 - centre
    top, bottom = centre - (first_row + PAD - 0.5), centre - (last_row + PAD + 0.5)
    xs, ys = np.stack([left, right, right, left], -1), np.stack([top, top, bottom, bottom], -1)
    return np.stack([xs, ys], -1).astype("float64")


def sample_transforms(images, seed=SEED):
    """Draws one affNIST-style transform per digit (module docstring).

    Args:
        images: ``(N, 28, 28, C)`` digits (their ink decides the translation range).
        seed: the ``transform_seed``.

    Returns:
        dict of float64 arrays: ``rotation (N,)`` degrees, ``shear (N,)``, ``scale (N, 2)`` ``(x, y)``,
        ``translation (N, 2)`` ``(x right, y up)`` pixels, ``matrix (N, 2, 2)`` (``A``).
    """
    box = ink_box(images)
    uniform = np.random.Generator(np.random.Philox(seed)).random((len(box), 6))
    rotation = ROTATION[0] + (ROTATION[1] - ROTATION[0]) * uniform[:, 0]
    shear = SHEAR[0] + (SHEAR[1] - SHEAR[0]) * uniform[:, 1]
    scale = SCALE[0] + (SCALE[1] - SCALE[0]) * uniform[:, 2:4]
    angle = np.radians(rotation)
    cos, sin, ones, zeros = np.cos(angle), np.sin(angle), np.ones_like(angle), np.zeros_like(angle)
    turn = np.stack([np.stack([cos, -sin], -1), np.stack([sin, cos], -1)], -2)
    lean = np.stack([np.stack([ones, shear], -1), np.stack([zeros, ones], -1)], -2)
    matrix = turn @ lean @ (scale[:, :, None] * np.eye(2))
    moved = np.einsum("nij,nkj->nki", matrix, box)  # (N, 4, 2)
    low, high = -CANVAS / 2.0 - moved.min(1), CANVAS / 2.0 - moved.max(1)
    translation = np.where(low <= high, low + uniform[:, 4:6] * (high - low), (low + high) / 2.0)
    return {"rotation": rotation, "shear": shear, "scale": scale, "translation": translation, "matrix": matrix}


def warp(images, matrix, translation, chunk=10000):
    """Pads digits to 40x40 and moves their content by ``p -> matrix @ p + translation`` about the centre.

    Args:
        images: uint8 ``(N, 28, 28, C)``.
        matrix: ``(N, 2, 2)`` invertible, acting on ``(x right, y up)``; translation: ``(N, 2)`` pixels.
        chunk: images warped per TensorFlow call.

    Returns:
        uint8 ``(N, 40, 40, C)``: bilinear samples, 0 outside the padded digit, rounded.
    """
    images = _check_digits("warp", images)
    matrix, translation = np.asarray(matrix, "float64"), np.asarray(translation, "float64")
    if matrix.shape != (len(images), 2, 2) or translation.shape != (len(images), 2):
        raise ValueError(
            f"affine_mnist.warp: arguments `matrix` and `translation` expected shapes ({len(images)}, 2, 2) and ({len(images)}, 2), "
            f"received {matrix.shape} and {translation.shape}."
        )
    inverse = np.linalg.inv(matrix)
    tx, ty = translation.T
    centre = (CANVAS - 1) / 2.0
    # Output pixel (row i, col j) samples the input at column a0 j + a1 i + a2 and row b0 j + b1 i + b2.
    a0, a1, b0, b1 = inverse[:, 0, 0], -inverse[:, 0, 1], -inverse[:, 1, 0], inverse[:, 1, 1]
    a2 = centre - inverse[:, 0, 0] * (centre + tx) + inverse[:, 0, 1] * (centre - ty)
    b2 = centre + inverse[:, 1, 0] * (centre + tx) - inverse[:, 1, 1] * (centre - ty)
    zeros = np.zeros_like(a0)
    transforms = np.stack([a0, a1, a2, b0, b1, b2, zeros, zeros], -1).astype("float32")
    out = np.zeros((len(images), CANVAS, CANVAS, images.shape[-1]), "uint8")
    for k in range(0, len(images), chunk):
        canvas = np.pad(images[k : k + chunk], ((0, 0), (PAD, PAD), (PAD, PAD), (0, 0))).astype("float32")
        with tf.device("/CPU:0"):  # one kernel on every machine, GPU or not
            warped = tf.raw_ops.ImageProjectiveTransformV3(
                images=canvas, transforms=transforms[k : k + chunk], output_shape=[CANVAS, CANVAS], fill_value=0.0,
                interpolation="BILINEAR", fill_mode="CONSTANT",
            )  # fmt: skip
        out[k : k + chunk] = np.clip(np.round(warped.numpy()), 0, 255)
    return out


def transform_digits(images, seed=SEED):
    """``(uint8 (N, 40, 40, C), parameters)``: every digit under its own transform (see :func:`sample_transforms`)."""
    parameters = sample_transforms(images, seed)
    return warp(images, parameters["matrix"], parameters["translation"]), parameters


def _arrays(split, data_dir, download, base="mnist", verify=True, transform_seed=SEED):
    base_info = get_info(base)
    base_options = {"verify": verify} if "verify" in base_info.options else {}
    images, labels = resolve_arrays(base_info, split, data_dir, download, **base_options)
    if images.shape[1:3] != (CANVAS - 2 * PAD,) * 2:
        raise ValueError(
            f"datasets.load: option `base` of dataset 'affine_mnist' expected a set of 28x28 digits ('mnist', 'mnist_sample', "
            f"'fashion_mnist'), received {base!r} with images of shape {images.shape[1:]}."
        )
    return transform_digits(images, transform_seed)[0], labels


def affnist_files(split="test", data_dir=None):
    """The official affNIST files of ``split`` found where ``load("affnist")`` looks (``data_dir``, then
    ``$KERAS_CAPSULES_DATA``, and their ``affnist/`` / ``affNIST/`` sub-folders), without reading them; ``[]`` if none."""
    stem = FILE_STEMS[split]
    names = (f"{stem}.mat", f"{stem}.mat.zip", f"{stem}_batches.zip")
    found = []
    for root in local_roots(data_dir):
        for folder in [os.path.join(root, sub) for sub in get_info("affnist").folders]:
            found += [os.path.join(folder, name) for name in names if os.path.isfile(os.path.join(folder, name))]
            batches = os.path.join(folder, f"{stem}_batches")
            if os.path.isdir(batches) and any(name.endswith(".mat") for name in os.listdir(batches)):
                found.append(batches)
    return list(dict.fromkeys(os.path.normpath(path) for path in found))


def evaluation_dataset(name, split="test", data_dir=None):
    """The dataset an ``eval_on`` entry ``name:split`` evaluates on.

    :data:`AFFNIST_OR_GENERATED` (``"affnist|affine_mnist"``) becomes ``"affnist"`` when the official
    affNIST files of ``split`` are present (:func:`affnist_files`), else ``"affine_mnist"``, the generated
    set; one printed line says which and why. Any other name is returned unchanged.
    """
    if name != AFFNIST_OR_GENERATED:
        return name
    files = affnist_files(split, data_dir)
    if files:
        print(f"{name}:{split}: evaluating on affnist:{split}, the official affNIST files ({files[0]}).", flush=True)
        return "affnist"
    searched = local_roots(data_dir) or ["no data_dir and $KERAS_CAPSULES_DATA unset"]
    print(
        f"{name}:{split}: no official affNIST {split} files in {searched}; evaluating on affine_mnist:{split}, "
        "an affNIST-style set generated from MNIST (not affNIST itself; see docs/datasets.md).",
        flush=True,
    )
    return "affine_mnist"


register_dataset(
    DatasetInfo(
        "affine_mnist",
        (CANVAS, CANVAS, 1),
        10,
        ("train", "test"),
        files="MNIST (see 'mnist'; option base='mnist_sample' or 'fashion_mnist' for another base)",
        options={"base": "mnist", "verify": True, "transform_seed": SEED},
        arrays=_arrays,
        description="MNIST under random affNIST-style affine transforms on 40x40 (rotation 20 deg, shear 0.2, scale 0.8-1.2, "
        "translation inside the canvas), generated with a fixed seed; not affNIST itself",
    )
)
