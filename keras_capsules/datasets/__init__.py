"""Datasets as ``tf.data`` pipelines (TensorFlow-specific): ``load(name, split, batch_size, ..., augment=...)``.

``"mnist_sample"`` ships inside the package (10,000 real MNIST test images, CC BY-SA 3.0) so the main
job and the tests need no network. Other sets come from local files (``data_dir`` /
``$KERAS_CAPSULES_DATA``) or a prepared TFDS copy; derived sets (``expanded_mnist``, ``multi_mnist``,
``diverse_multi_mnist``) are generated from MNIST on the fly. A folder of your own images (one
sub-folder per class) is read by ``from_directory`` or registered by name with ``register_folder``.
See ``docs/datasets.md``.
"""

from keras_capsules.datasets.affine_mnist import AFFNIST_OR_GENERATED, evaluation_dataset  # registers affine_mnist
from keras_capsules.datasets.augment import (
    Augmentation,
    available_augmentations,
    get_augmentation,
    register_augmentation,
)
from keras_capsules.datasets.folders import folder_summary, from_directory, in_class_order, register_folder
from keras_capsules.datasets.formats import DataFormatError
from keras_capsules.datasets.idx import IdxFormatError, read_idx
from keras_capsules.datasets.loaders import available, first_examples, from_arrays, info, load, load_arrays, num_classes
from keras_capsules.datasets.registry import DatasetInfo, class_names, register_dataset

__all__ = [
    "AFFNIST_OR_GENERATED",
    "Augmentation",
    "DataFormatError",
    "DatasetInfo",
    "IdxFormatError",
    "available",
    "available_augmentations",
    "class_names",
    "evaluation_dataset",
    "first_examples",
    "folder_summary",
    "in_class_order",
    "from_directory",
    "get_augmentation",
    "info",
    "load",
    "from_arrays",
    "load_arrays",
    "num_classes",
    "read_idx",
    "register_augmentation",
    "register_dataset",
    "register_folder",
]
