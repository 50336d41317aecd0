"""Evaluation beyond accuracy: robustness under image transforms and under adversarial attacks.

- :func:`robustness`: a model's accuracy on deterministic rotated, scaled, sheared and translated copies
  of a dataset split (the same images for every model: fixed seed, recorded), as a
  :class:`RobustnessResult` with a text table, a JSON dict and a plot; :func:`plot_comparison` draws
  several models on one figure.
- :func:`adversarial_examples`: white-box L-infinity attacks, FGSM and PGD, on images in [0, 1], attacking the
  model's own training loss (or ``loss=``); :func:`adversarial_accuracy`: accuracy under one attack per
  epsilon, as an :class:`AdversarialResult` that records the loss attacked.
- ``keras_capsules.evaluation.transforms``: the affine image transforms themselves (NumPy, batched,
  bilinear with zero fill), with their sign conventions.
"""

from keras_capsules.evaluation import transforms
from keras_capsules.evaluation.adversarial import ATTACKS, AdversarialExamples, adversarial_examples
from keras_capsules.evaluation.adversarial_accuracy import EPSILONS, AdversarialResult, adversarial_accuracy
from keras_capsules.evaluation.robustness import (
    TRANSFORMS,
    RobustnessResult,
    Transform,
    plot_comparison,
    robustness,
    transformed_images,
)

__all__ = [
    "ATTACKS",
    "AdversarialExamples",
    "AdversarialResult",
    "EPSILONS",
    "adversarial_accuracy",
    "adversarial_examples",
    "TRANSFORMS",
    "RobustnessResult",
    "Transform",
    "plot_comparison",
    "robustness",
    "transformed_images",
    "transforms",
]
