"""What several ``keras-capsules`` commands share: the dataset and augmentation a model file was trained with, and help texts.

Imports neither Keras nor TensorFlow at module level (``keras-capsules --help`` stays fast).
"""

DATA_DEFAULT = "$KERAS_CAPSULES_DATA, then the TFDS cache"
TRAINED_ON = "the one it was trained on, from the metrics.json next to it; else mnist_sample, the embedded MNIST sample"


def trained_on(model_file):
    """The dataset of the ``train`` run that wrote ``model_file`` (its ``metrics.json``), else the embedded sample."""
    from keras_capsules.training.evaluation import training_record

    return training_record(model_file).get("dataset") or "mnist_sample"


def augment_option(value, model_file):
    """The ``--augment`` value: ``"auto"`` -> the preset in ``model_file``'s ``metrics.json`` (``None`` without a file), ``"none"`` -> ``None``."""
    from keras_capsules.training.evaluation import training_preset

    if value == "auto":
        return training_preset(model_file) if model_file else None
    return None if value.lower() == "none" else value
