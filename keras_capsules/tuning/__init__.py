"""keras-tuner search spaces for the capsule applications (extra ``tuning``: keras-tuner + tensorboard).

``CapsuleHyperModel(application, classes=...)`` defines router, routing iterations, capsule sizes,
learning rate and reconstruction weight as hyperparameters whose defaults are the paper settings;
``tune(model, dataset, max_trials)`` runs a random search (also ``keras-capsules tune``).
"""

from keras_capsules.tuning.hypermodels import CapsuleHyperModel, HyperCapsNet, HyperEffCapsNet
from keras_capsules.tuning.search import tune

__all__ = ["CapsuleHyperModel", "HyperCapsNet", "HyperEffCapsNet", "tune"]
