"""``keras-capsules predict``: the top classes of images (PNG, JPEG, ``.npy``) under a ``.keras`` model or a preset.

Imports neither Keras nor TensorFlow until the command runs (``keras-capsules --help`` stays fast).
"""

import sys

from keras_capsules.cli.images import image_files, read_images, to_model_input
from keras_capsules.cli.options import positive_int


def _load(args):
    """``(model, names)``: the model, and its class names (``--dataset``'s, the model's own, a preset's, or those of the dataset in
    the ``metrics.json`` next to a ``.keras`` file; ``None``: indices)."""
    from keras_capsules import presets
    from keras_capsules.training.evaluation import training_record

    opened = presets.open_model(args.model)
    if opened is None:
        raise ValueError(
            f"predict: argument `MODEL` expected a .keras file or a preset MODEL/NAME (one of {', '.join(presets.available())}), "
            f"received {args.model!r}: no such file or preset."
        )
    model, key = opened
    if args.dataset:
        return model, args.dataset
    if presets.class_names_of(model) is not None:  # carried by the model: a model trained by `train`, a preset folder
        return model, presets.class_names_of(model)
    if key is None:
        return model, training_record(args.model).get("dataset")
    return model, presets.get(*key)


def _predict(args):
    import numpy as np

    from keras_capsules import presets

    model, names = _load(args)
    shape = model.input_shape
    if not (isinstance(shape, tuple) and len(shape) == 4):
        raise ValueError(
            f"predict: {args.model} takes inputs of shape {shape}; predict needs one image input (batch, height, width, channels)."
        )
    images, failed = [], []
    paths = [found for path in args.images for found in image_files(path)]
    for path in paths:  # an unreadable image is reported; the others are answered
        try:
            images += [(label, to_model_input(label, image, *shape[1:])) for label, image in read_images(path)]
        except ValueError as error:
            failed.append(path)
            print(f"keras-capsules predict: error: {error}", file=sys.stderr)
    if not images:
        return 2
    batch = np.stack([values for _, values in images])
    scores = model.predict(batch, batch_size=args.batch_size, verbose=0)
    if not (isinstance(scores, np.ndarray) and scores.ndim == 2):
        returned = (
            f"an array of shape {scores.shape}" if isinstance(scores, np.ndarray) else f"a {type(scores).__name__}"
        )
        raise ValueError(
            f"predict: {args.model} returns {returned}; predict needs one output of class scores (batch, classes)."
        )
    if names is None:
        unknown = f"class names unknown (no --dataset, none in the model, no metrics.json next to {args.model}): class indices shown"
        print(f"keras-capsules predict: {unknown}.", file=sys.stderr)
        order = np.argsort(-scores, axis=1, kind="stable")[:, : args.top_k]
        ranked = [[(int(i), str(i), float(row[i])) for i in indices] for row, indices in zip(scores, order)]
    else:
        ranked = presets.decode_predictions(scores, names, top=args.top_k)
    for (label, _), classes in zip(images, ranked):
        print(label)
        width = max(len(str(index)) for index, _, _ in classes)
        for index, name, score in classes:
            print(f"  {score:.4f}  {index:>{width}d}  {name}")
    return 2 if failed else 0  # a user error, as a bad argument


def add_predict_command(commands):
    predict = commands.add_parser(
        "predict",
        help="the top classes of images (PNG, JPEG, .npy) under a .keras model or a preset, with class names",
        description="Prints, for every image, its top classes with their names and scores (capsule lengths or probabilities), "
        "best first, as lines SCORE CLASS NAME. MODEL is a .keras file or a preset written MODEL/NAME or MODEL:NAME, any case "
        "(e.g. EffCapsNet/mnist; `keras-capsules presets` lists them). Images are PNG, JPEG, GIF, BMP or WebP files, or .npy arrays "
        "(H, W), (H, W, C) or batches (N, H, W[, C]) of integers 0..255 or floats in [0, 1]; each is converted to the model's "
        "input: scaled to [0, 1], RGB to grey by luminance or grey to RGB, alpha dropped, and resized (bilinear) where its size "
        "differs, which is said on stderr. An image that cannot be read is reported on stderr, one line naming its path, and "
        "the others are answered; the exit status is then 2.",
    )
    predict.add_argument(
        "model", metavar="MODEL", help="a .keras file, or a preset MODEL/NAME or MODEL:NAME, e.g. EffCapsNet/mnist"
    )
    predict.add_argument(
        "images",
        metavar="IMAGE",
        nargs="+",
        help="PNG, JPEG, GIF, BMP, WebP or .npy files, or folders: every such file in them and their sub-folders",
    )
    predict.add_argument(
        "--top-k", type=positive_int, default=5, metavar="K", help="classes shown per image (default: 5 classes)"
    )
    predict.add_argument(
        "--dataset", metavar="NAME",
        help="dataset whose class names to show (default: a preset's dataset; for a .keras file the one in the metrics.json "
        "next to it, else class indices)",
    )  # fmt: skip
    predict.add_argument(
        "--batch-size", type=int, default=32, metavar="IMAGES", help="images per model call (default: 32 images)"
    )
    predict.set_defaults(handler=_predict)
