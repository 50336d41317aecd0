"""What several ``keras-capsules`` commands share: option parsers, model and preset names, the dataset and augmentation a model file was trained with, help texts.

Imports neither Keras nor TensorFlow at module level (``keras-capsules --help`` stays fast).
"""

import argparse
import ast
import difflib
import os

DATA_DEFAULT = "$KERAS_CAPSULES_DATA, then the TFDS cache"
TRAINED_ON = (
    "the one it was trained on, from the metrics.json next to it (a folder of images: read again from where it was); "
    "else mnist_sample, the embedded MNIST sample"
)
BY_CLASS = " (a folder of your images: that many, drawn class by class in proportion)"
FOLDER_HELP = (
    "without --dataset: a folder of your own images, one subfolder per class (or train/ and test/ holding them), read at the "
    "model's input size and channels; its test/ split, else all its images"
)


def augment_option(value, model_file):
    """The ``--augment`` value: ``"auto"`` -> the preset in ``model_file``'s ``metrics.json`` (``None`` without a file), ``"none"`` -> ``None``."""
    from keras_capsules.training.evaluation import training_preset

    if value == "auto":
        return training_preset(model_file) if model_file else None
    return None if value.lower() == "none" else value


def key_values(pairs, flag):
    """``["a=1", "b=x"]`` -> ``{"a": 1, "b": "x"}`` (values parsed as Python literals when possible)."""
    result = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"keras-capsules: argument `{flag}` expected KEY=VALUE, received {pair!r}.")
        try:
            result[key] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            result[key] = raw
    return result


def none_or(kind):
    """An argparse type: ``'none'`` (any case) -> ``None``, anything else -> ``kind(text)``."""

    def parse(text):
        return None if text.lower() == "none" else kind(text)

    parse.__name__ = kind.__name__
    return parse


def positive_int(text):
    """An argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, received {text!r}")
    return value


def model_name(name):
    """The application or recipe model called ``name`` in any case (``effcapsnet`` -> ``EffCapsNet``).

    Raises:
        ValueError: no such model; the message suggests the closest name.
    """
    from keras_capsules import applications, recipes

    constructors = [
        n for n in applications.__all__ if n[:1].isupper() and not isinstance(getattr(applications, n), type)
    ]
    known = {model.lower(): model for model in [*constructors, *(model for model, _, _ in recipes.available())]}
    if name.lower() in known:
        return known[name.lower()]
    close = difflib.get_close_matches(name.lower(), list(known), n=1, cutoff=0.6)
    hint = f" Did you mean {known[close[0]]!r}?" if close else ""
    raise ValueError(
        f"no recipe for model {name!r}.{hint} Models (any case): {', '.join(sorted(set(known.values())))}."
    )


def preset_option(text, flag):
    """``presets.find(text)``, or a ValueError naming ``flag`` and the presets."""
    from keras_capsules import presets

    key = presets.find(text)
    if key is None:
        raise ValueError(
            f"argument `{flag}` expected a preset MODEL/NAME or MODEL:NAME (one of {', '.join(presets.available())}), received {text!r}."
        )
    return key


def folder_dataset(command, data_dir, image_size=None, channels=None, drop_empty_classes=False):
    """Registers ``data_dir``, a folder of class subfolders (or of ``train/`` and ``test/`` holding them), and returns its dataset name.

    Used when a command gets ``--data-dir`` and no ``--dataset``: the folder is the data, never a
    reason to fall back to another set. Its read summary (classes, images, size and channels and why,
    conversions, skipped files) is printed. ``drop_empty_classes``: ``--drop-empty-classes``.

    Raises:
        ValueError: naming ``command`` and the folder, saying what was looked for, when the folder holds
            no class subfolders of images (the reader's reason follows).
    """
    from keras_capsules import datasets

    try:
        return datasets.register_folder(
            data_dir,
            image_size=None if image_size is None else tuple(image_size),
            channels=channels,
            drop_empty_classes=drop_empty_classes,
        ).name
    except (OSError, ValueError) as error:
        raise ValueError(
            f"{command}: argument `--data-dir` expected a folder of images with one subfolder per class (or train/ and test/ "
            f"holding them), since no --dataset was given; received {data_dir!r}: {error} To use a named dataset's standard "
            f"files in that folder instead, pass --dataset NAME (`keras-capsules recipes` lists the datasets)."
        ) from None


def add_folder_options(parser):
    """``--image-size H W`` and ``--channels C``: how a folder of images (``--data-dir`` without ``--dataset``) is read."""
    parser.add_argument(
        "--image-size", type=positive_int, nargs=2, metavar=("HEIGHT", "WIDTH"),
        help="with --data-dir FOLDER of images: resize every image to this size (default: the folder's most common size, "
        "scaled down to a longer side of 128 px)",
    )  # fmt: skip
    parser.add_argument(
        "--channels",
        type=int,
        choices=(1, 3),
        help="with --data-dir FOLDER of images: 1 (gray) or 3 (RGB) (default: 1 when every image is gray, else 3)",
    )


def folder_for_model(command, data_dir, model, split):
    """``(dataset name, split)``: the folder of images ``data_dir`` read at ``model``'s input size and channels.

    A folder without ``test/`` has one split, all its images: asked for ``"test"`` (the default), the
    command evaluates them and says so. The folder's labels are numbered as the model's class names order its
    outputs (:func:`~keras_capsules.datasets.in_class_order`: a preset's, or those a trained file carries);
    a model without class names takes the folder's classes in the folder's order, and the command says so.

    Raises:
        ValueError: the folder holds no class subfolders, has no split ``split``, or a class folder whose name
            is not one of the model's classes.
    """
    from keras_capsules import datasets
    from keras_capsules.presets import class_names_of

    height, width, channels = tuple(model.inputs[0].shape[1:])
    name = folder_dataset(command, data_dir, (height, width), channels)
    names = class_names_of(model)
    if names is None:
        print(
            f"{command}: the model carries no class names: the folder's classes {list(datasets.class_names(name))} "
            "are taken as its outputs 0, 1, ... in that order."
        )
    else:
        name = datasets.in_class_order(name, names, command)
    splits = datasets.info(name).splits
    if split == "test" and split not in splits:
        print(
            f"{command}: {data_dir} has no test/ split: evaluating all its images (its training images too, if it trained the model)."
        )
        return name, "train"
    if split not in splits:
        raise ValueError(
            f"{command}: argument `--split` expected one of {list(splits)} for the folder {data_dir!r}, received {split!r}."
        )
    return name, split


def add_model_argument(parser, dest="model"):
    """The positional ``MODEL.keras|PRESET`` of the commands that read a trained model."""
    parser.add_argument(
        dest,
        metavar="MODEL.keras|PRESET",
        help="a .keras file, a preset MODEL/NAME or MODEL:NAME (e.g. EffCapsNet/mnist) or a preset folder",
    )


def open_model(command, text):
    """``(model, preset key or None)``: a ``.keras`` file loaded compiled (its training loss and metrics), else a
    preset ``MODEL/NAME`` or a preset folder (uncompiled).

    Raises:
        ValueError: ``text`` names none of them.
    """
    from keras_capsules import presets
    from keras_capsules.saving import load_model

    if text.endswith(".keras") or os.path.isfile(text):
        return load_model(text), None
    opened = presets.open_model(text)
    if opened is None:
        raise ValueError(
            f"{command}: argument `MODEL` expected a .keras file, a preset MODEL/NAME (`keras-capsules presets` lists "
            f"them) or a preset folder, received {text!r}: no such file, preset or preset folder."
        )
    return opened


def dataset_for_model(command, open_model, model_text, key, dataset, data_dir, split):
    """``(dataset name, split)`` that ``command`` evaluates the model ``model_text`` names on, when ``--dataset`` is
    ``dataset``.

    In order: ``dataset`` when given (``data_dir`` then holds its standard files); the folder of images
    ``data_dir`` (:func:`folder_for_model`); a preset's own dataset (``key``: its ``(model, name)``); the dataset of
    the ``train`` run that wrote the file ``model_text`` (its ``metrics.json``), a folder of images read again from
    where it was; else the embedded MNIST sample. ``open_model()`` returns the model, called only for a folder of
    images (read at the model's input size, channels and class names).

    Raises:
        ValueError: the folder of images the model was trained on is not there any more, or as
            :func:`folder_for_model`.
    """
    from keras_capsules.training.evaluation import training_record

    if dataset is not None:
        return dataset, split
    if data_dir is not None:
        return folder_for_model(command, data_dir, open_model(), split)
    if key is not None:
        from keras_capsules import presets

        return presets.get(*key).dataset, split
    record = training_record(model_text)
    folder = (record.get("dataset_folder") or {}).get("path")
    if folder is None:
        return record.get("dataset") or "mnist_sample", split
    if not os.path.isdir(folder):
        raise ValueError(
            f"{command}: {model_text} was trained on the folder of images {folder} (its metrics.json says), which is "
            "not there any more; expected --data-dir FOLDER (your images) or --dataset NAME."
        )
    print(
        f"{command}: {model_text} was trained on the folder {folder}: reading it (--data-dir or --dataset for another)."
    )
    return folder_for_model(command, folder, open_model(), split)


def memory_size(text):
    """``--max-memory``'s value in bytes (``8GB``, ``512MB``, ``2GiB``), or argparse's one-line error."""
    from keras_capsules.training.memory_plan import parse_size

    try:
        return parse_size(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
