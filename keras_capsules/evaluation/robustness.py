"""Accuracy under rotation, scale, shear and translation: :func:`robustness` and its :class:`RobustnessResult`.

Every model sees the same transformed images: the per-image draws (a rotation's or shear's sign, a
translation's direction) come from ``seed`` and the image's index only, and the result records the seed.
Transforms act on the dataset's images; a model that takes larger images gets them zero-padded centrally
afterwards (recorded in the result), so the transformed content is the same for every input size.
"""

import dataclasses
import json
import os
import sys
import zlib
from typing import Callable, Optional

import numpy as np

from keras_capsules import errors
from keras_capsules.evaluation import transforms as _transforms

_SIGNS = np.array([1.0, -1.0])
#: Translation directions as ``(dx, dy)``: right, down, left, up.
_DIRECTIONS = np.array([(1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0)])


@dataclasses.dataclass(frozen=True)
class Transform:
    """A transform family: its default magnitudes, their unit, and what is drawn per image.

    ``function(images, magnitude, choice)`` transforms ``(N, H, W, C)`` images; ``choice`` ``(N,)`` holds
    each image's draw from ``range(choices)``.
    """

    name: str
    magnitudes: tuple
    unit: str
    choices: int
    draw: str
    function: Callable


#: The built-in transforms, in table order.
TRANSFORMS = {
    transform.name: transform
    for transform in (
        Transform(
            "rotation",
            (0, 15, 30, 45, 60),
            "degrees",
            2,
            "each image turned +m or -m degrees (counter-clockwise is +), the sign drawn per image",
            lambda images, m, choice: _transforms.rotate(images, m * _SIGNS[choice]),
        ),
        Transform(
            "scale",
            (0.6, 0.8, 1.0, 1.2, 1.4),
            "factor",
            1,
            "every image scaled by m about its centre",
            lambda images, m, choice: _transforms.scale(images, m),
        ),
        Transform(
            "shear",
            (0, 0.1, 0.2, 0.3, 0.4),
            "factor",
            2,
            "each image sheared (x, y) -> (x + s m y, y), the sign s = +1 or -1 drawn per image",
            lambda images, m, choice: _transforms.shear(images, m * _SIGNS[choice]),
        ),
        Transform(
            "translation",
            (0, 2, 4, 6, 8),
            "pixels",
            4,
            "each image moved m pixels right, down, left or up, the direction drawn per image",
            lambda images, m, choice: _transforms.translate(
                images, m * _DIRECTIONS[choice, 0], m * _DIRECTIONS[choice, 1]
            ),
        ),
    )
}


def _choices(transform, seed, count):
    """Each of the first ``count`` images' draw for ``transform``: depends on ``seed``, the transform and the index only."""
    return np.random.default_rng([seed, zlib.crc32(transform.name.encode())]).integers(0, transform.choices, size=count)


def _resolve_transforms(transforms):
    """``{name: magnitudes}`` from ``None`` (every built-in default), a list of names, or a ``{name: magnitudes}`` dict."""
    if transforms is None:
        transforms = list(TRANSFORMS)
    if isinstance(transforms, str) or not isinstance(transforms, (list, tuple, dict)):
        raise TypeError(
            f"robustness: argument `transforms` expected None, a list of names or a {{name: magnitudes}} dict, received {transforms!r}."
        )
    if not isinstance(transforms, dict):
        transforms = {name: None for name in transforms}
    resolved = {}
    for name, magnitudes in transforms.items():
        if name not in TRANSFORMS:
            raise ValueError(
                f"robustness: argument `transforms` expected names from {list(TRANSFORMS)}, received {name!r}."
            )
        magnitudes = TRANSFORMS[name].magnitudes if magnitudes is None else magnitudes
        try:
            resolved[name] = tuple(float(m) for m in magnitudes)
        except (TypeError, ValueError):
            raise ValueError(
                f"robustness: argument `transforms` expected a list of numbers for {name!r}, received {magnitudes!r}."
            ) from None
        if not resolved[name]:
            raise ValueError(
                f"robustness: argument `transforms` expected at least one magnitude for {name!r}, received none."
            )
    return resolved


def transformed_images(images, transform, magnitude, seed=0):
    """The images :func:`robustness` feeds a model for ``transform`` at ``magnitude``.

    Args:
        images: ``(N, H, W, C)`` in [0, 1], the evaluated set from its first image on.
        transform: a name from ``TRANSFORMS``.
        magnitude: the transform's magnitude (degrees, factor, or pixels).
        seed: the result's ``seed``.

    Returns:
        float32 ``(N, H, W, C)``, before any padding to the model's input size.
    """
    if transform not in TRANSFORMS:
        raise ValueError(
            f"transformed_images: argument `transform` expected one of {list(TRANSFORMS)}, received {transform!r}."
        )
    transform = TRANSFORMS[transform]
    return transform.function(images, float(magnitude), _choices(transform, seed, len(images)))


@dataclasses.dataclass
class RobustnessResult:
    """Accuracy of one model on transformed copies of a dataset split.

    Attributes:
        model: the model's name (preset key, file name, or Keras name).
        dataset: the dataset evaluated.
        split: its split.
        examples: how many of its images (the first ones).
        seed: the seed of every per-image draw.
        accuracy: on the untransformed images.
        table: ``{transform: [(magnitude, accuracy), ...]}``, accuracies in [0, 1].
        units: ``{transform: unit of its magnitudes}``.
        draws: ``{transform: what is drawn per image from the seed}``.
        padding: ``((top, bottom), (left, right))`` zero padding added after the transform to fit the
            model's input, or ``None``.
        augment: the augmentation preset whose evaluation transform followed the geometric one, or ``None``.
    """

    model: str
    dataset: str
    split: str
    examples: int
    seed: int
    accuracy: float
    table: dict
    units: dict
    draws: dict
    padding: Optional[tuple] = None
    augment: Optional[str] = None

    def to_text(self):
        """The table as aligned text (what ``keras-capsules robustness`` prints)."""
        lines = [
            f"{self.model} on {self.dataset} {self.split}: {self.examples:,d} images, seed {self.seed}",
            f"untransformed accuracy: {100 * self.accuracy:.2f} %",
            f"{'transform':<12}{'magnitude':>16}{'accuracy':>12}",
        ]
        for name, rows in self.table.items():
            for index, (magnitude, accuracy) in enumerate(rows):
                lines.append(
                    f"{name if index == 0 else '':<12}{f'{magnitude:g} {self.units[name]}':>16}{f'{100 * accuracy:.2f} %':>12}"
                )
        lines += [f"{name}: {draw}" for name, draw in self.draws.items()]
        if self.augment:
            lines.append(f"after the transform, the evaluation transform of augmentation preset {self.augment!r}")
        if self.padding:
            (top, bottom), (left, right) = self.padding
            lines.append(
                f"after the transform, images zero-padded by {top}/{bottom} rows and {left}/{right} columns (top/bottom, left/right) to the model's input size"
            )
        return "\n".join(lines)

    def to_dict(self):
        """A JSON-serialisable dict; :meth:`from_dict` reads it back."""
        record = dataclasses.asdict(self)
        record["table"] = {name: [[float(m), float(a)] for m, a in rows] for name, rows in self.table.items()}
        record["padding"] = None if self.padding is None else [list(pair) for pair in self.padding]
        return record

    @classmethod
    def from_dict(cls, record):
        """The result :meth:`to_dict` wrote (e.g. read back from a ``--json`` file)."""
        record = dict(record)
        record["table"] = {name: [(float(m), float(a)) for m, a in rows] for name, rows in record["table"].items()}
        record["padding"] = None if record.get("padding") is None else tuple(tuple(pair) for pair in record["padding"])
        return cls(**record)

    def plot(self, path=None):
        """Accuracy against magnitude, one panel per transform; a matplotlib ``Figure``, also written to ``path`` as PNG when given."""
        return plot_comparison([self], path)


def _figure_class():
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(
            'keras_capsules.evaluation: plotting needs matplotlib, which is not installed. Install it with `pip install "keras-capsules[plots]"`.'
        ) from None
    return Figure


def plot_comparison(results, path=None):
    """Several models' :class:`RobustnessResult` on one figure: a panel per transform, a line per model.

    The results must come from the same transformed images (dataset, split, examples and seed).
    Returns a matplotlib ``Figure`` (no ``pyplot`` state touched), also written to ``path`` as PNG when given.
    """
    results = list(results)
    if not results or not all(isinstance(result, RobustnessResult) for result in results):
        raise TypeError(
            f"plot_comparison: argument `results` expected one or more RobustnessResult, received {results!r}."
        )
    images = {(r.dataset, r.split, r.examples, r.seed) for r in results}
    if len(images) > 1:
        raise ValueError(
            f"plot_comparison: argument `results` expected results on the same transformed images (dataset, split, examples, seed), received {sorted(images)}."
        )
    names = list(dict.fromkeys(name for result in results for name in result.table))
    figure = _figure_class()(figsize=(3.2 * len(names), 3.2))
    axes = figure.subplots(1, len(names), squeeze=False)[0]
    for ax, name in zip(axes, names):
        for result in results:
            if name in result.table:
                magnitudes, accuracies = zip(*result.table[name])
                ax.plot(magnitudes, [100 * a for a in accuracies], marker="o", label=result.model)
        ax.set_title(name)
        ax.set_xlabel(next(r.units[name] for r in results if name in r.units))
        ax.set_ylim(0, 101)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"accuracy on {results[0].dataset} {results[0].split} (%)")
    axes[-1].legend(fontsize=8, loc="lower left")
    figure.tight_layout()
    if path is not None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        figure.savefig(path, format="png", dpi=100, bbox_inches="tight")
    return figure


def _resolve_model(model):
    """``(keras model, name)`` from a model, a ``.keras`` path or a preset name."""
    import keras

    if isinstance(model, keras.Model):
        return model, model.name
    if isinstance(model, (str, os.PathLike)) and not isinstance(model, bool):
        text = os.fspath(model)
        from keras_capsules import presets

        opened = presets.open_model(text)
        if opened is not None:
            return opened[0], "/".join(opened[1]) if opened[1] else os.path.basename(text)
        raise ValueError(
            f"robustness: argument `model` expected a Keras model, a .keras file or a preset MODEL/NAME "
            f"(one of {', '.join(presets.available())}), received {text!r}."
        )
    raise TypeError(
        f"robustness: argument `model` expected a Keras model, a .keras file or a preset name, received {model!r}."
    )


def _padding(model, image_shape):
    """``((top, bottom), (left, right))`` that fits ``(H, W, C)`` images to the model's input, or ``None``."""
    if not getattr(model, "inputs", None):
        return None
    shape = tuple(model.inputs[0].shape[1:])
    if (
        len(shape) != 3
        or shape[2] not in (None, image_shape[2])
        or any(s is not None and s < i for s, i in zip(shape[:2], image_shape[:2]))
    ):
        raise ValueError(
            f"robustness: the model's input shape {shape} does not take the dataset's {image_shape} images "
            "(same channels and at least their height and width expected)."
        )
    pads = tuple(
        (0, 0) if s is None else ((s - i) // 2, s - i - (s - i) // 2) for s, i in zip(shape[:2], image_shape[:2])
    )
    return pads if any(any(pair) for pair in pads) else None


def _load_images(dataset, split, limit, data_dir, download):
    from keras_capsules import datasets

    images, labels = datasets.load_arrays(dataset, split, data_dir=data_dir, download=download)
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(
            f"robustness: argument `dataset` expected a single-label dataset, received {dataset!r} with labels of shape {labels.shape}."
        )
    if limit is not None:
        if not errors.is_integer(limit) or limit < 1:
            raise ValueError(f"robustness: argument `limit` expected a positive integer or None, received {limit!r}.")
        images, labels = datasets.first_examples(dataset, images, labels, int(limit))
    images = images.astype("float32") / 255.0 if images.dtype == np.uint8 else images.astype("float32")
    return images, labels


def _evaluation_transform(augment):
    """``(N, H, W, C) -> (N, H', W', C')``: the evaluation transform of augmentation preset ``augment``, or ``None``
    (no preset, or one that transforms training images only)."""
    if augment is None:
        return None
    from keras_capsules import datasets

    evaluate = datasets.get_augmentation(augment).evaluate
    if evaluate is None:
        return None
    import tensorflow as tf

    return lambda images: next(
        iter(tf.data.Dataset.from_tensor_slices(images).map(evaluate).batch(len(images)))
    ).numpy()


def robustness(
    model,
    dataset="mnist",
    split="test",
    transforms=None,
    limit=None,
    batch_size=256,
    data_dir=None,
    seed=0,
    download=False,
    augment=None,
):
    """Accuracy of ``model`` on deterministic transformed copies of a dataset split.

    Args:
        model: a Keras model that outputs class scores ``(N, classes)``, a ``.keras`` file, or a preset
            ``"MODEL/NAME"`` (``"EffCapsNet/mnist"``, any case).
        dataset: a name from ``datasets.available()``; images scaled to [0, 1].
        split: the split evaluated.
        transforms: ``None`` for every built-in one at its default magnitudes (``TRANSFORMS``: rotation
            0-60 degrees, scale 0.6-1.4, shear 0-0.4, translation 0-8 pixels), a list of their names, or
            ``{name: magnitudes}``.
        limit: evaluate the first ``limit`` images only (:func:`~keras_capsules.datasets.first_examples`).
        batch_size: images per prediction call.
        data_dir: folder with the dataset's standard files (as ``datasets.load_arrays``).
        seed: fixes each image's draw (sign, direction); the same seed gives every model the same images.
        download: allow a TFDS download when no local copy exists.
        augment: an augmentation preset (``datasets.available_augmentations()``) whose evaluation
            transform (e.g. a standardisation) the model was trained with: applied after the geometric
            transform, before any padding. ``None``: the images as they come.

    Returns:
        A :class:`RobustnessResult`.
    """
    import keras

    magnitudes = _resolve_transforms(transforms)
    if not errors.is_integer(batch_size) or batch_size < 1:
        raise ValueError(f"robustness: argument `batch_size` expected a positive integer, received {batch_size!r}.")
    if not errors.is_integer(seed) or seed < 0:
        raise ValueError(f"robustness: argument `seed` expected a non-negative integer, received {seed!r}.")
    batch_size, seed = int(batch_size), int(seed)  # NumPy integers too; the result's JSON records the seed
    model, name = _resolve_model(model)
    images, labels = _load_images(dataset, split, limit, data_dir, download)
    evaluation_transform = _evaluation_transform(augment)
    prepare = evaluation_transform or (lambda images: images)
    padding = _padding(model, prepare(images[:1]).shape[1:])

    def accuracy(transform=None, magnitude=None):
        choices = None if transform is None else _choices(transform, seed, len(images))
        correct = 0
        for start in range(0, len(images), batch_size):
            batch = images[start : start + batch_size]
            if transform is not None:
                batch = transform.function(batch, magnitude, choices[start : start + batch_size])
            batch = prepare(batch)
            if padding is not None:
                batch = np.pad(batch, ((0, 0), *padding, (0, 0)))
            scores = model.predict_on_batch(batch)
            if not hasattr(scores, "shape") or len(scores.shape) != 2:
                raise ValueError(
                    f"robustness: the model's output expected class scores of shape (N, classes), received {scores!r:.200}."
                )
            correct += int(
                np.sum(np.argmax(keras.ops.convert_to_numpy(scores), axis=-1) == labels[start : start + batch_size])
            )
        return correct / len(images)

    table = {t: [(m, accuracy(TRANSFORMS[t], m)) for m in values] for t, values in magnitudes.items()}
    return RobustnessResult(
        model=name,
        dataset=dataset,
        split=split,
        examples=len(images),
        seed=seed,
        accuracy=accuracy(),
        table=table,
        units={t: TRANSFORMS[t].unit for t in magnitudes},
        draws={t: TRANSFORMS[t].draw for t in magnitudes},
        padding=padding,
        augment=augment if evaluation_transform else None,
    )


def report(
    model,
    dataset="mnist",
    split="test",
    transforms=None,
    limit=None,
    batch_size=256,
    data_dir=None,
    seed=0,
    download=False,
    augment=None,
    plot=None,
    json_path=None,
    stream=None,
):
    """What ``keras-capsules robustness`` runs: :func:`robustness`, its table printed to ``stream`` (stdout),
    the plot written to ``plot`` (PNG) and the result to ``json_path`` when given. Returns the result."""
    result = robustness(
        model,
        dataset,
        split,
        transforms=transforms,
        limit=limit,
        batch_size=batch_size,
        data_dir=data_dir,
        seed=seed,
        download=download,
        augment=augment,
    )
    print(result.to_text(), file=stream or sys.stdout)
    if plot is not None:
        result.plot(plot)
    if json_path is not None:
        os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
        with open(json_path, "w") as handle:
            json.dump(result.to_dict(), handle, indent=2)
    return result
