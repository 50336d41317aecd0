"""Evaluation beyond accuracy: robustness under image transforms.

- :func:`robustness`: a model's accuracy on deterministic rotated, scaled, sheared and translated copies
  of a dataset split (the same images for every model: fixed seed, recorded), as a
  :class:`RobustnessResult` with a text table, a JSON dict and a plot; :func:`plot_comparison` draws
  several models on one figure.
- ``keras_capsules.evaluation.transforms``: the affine image transforms themselves (NumPy, batched,
  bilinear with zero fill), with their sign conventions.
"""

from keras_capsules.evaluation import transforms
from keras_capsules.evaluation.robustness import (
    TRANSFORMS,
    RobustnessResult,
    Transform,
    plot_comparison,
    robustness,
    transformed_images,
)

__all__ = [
    "TRANSFORMS",
    "RobustnessResult",
    "Transform",
    "plot_comparison",
    "robustness",
    "transformed_images",
    "transforms",
]
