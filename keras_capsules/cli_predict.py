"""``keras-capsules predict``: the top classes of images (PNG, JPEG, ``.npy``) under a ``.keras`` model or a preset.

Imports neither Keras nor TensorFlow until the command runs (``keras-capsules --help`` stays fast).
"""

import argparse
import os
import sys

#: Picture files, decoded by ``tf.io.decode_image`` (GIF: the first frame).
PICTURE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".bmp")
#: ITU-R BT.601 luma weights of R, G, B (those of ``tf.image.rgb_to_grayscale``).
LUMA = (0.299, 0.587, 0.114)


def read_images(path):
    """The images in file ``path``: ``[(label, array (H, W, C)), ...]``, one per picture or per array of a ``.npy`` batch.

    A ``.npy`` file holds one image ``(H, W)`` or ``(H, W, C)`` with ``C`` in 1..4, or a batch
    ``(N, H, W)`` or ``(N, H, W, C)`` whose images are labelled ``path[i]`` (a 3-D array is one
    image when its last axis has at most 4 entries, else a batch).

    Raises:
        ValueError: the file is missing, of another kind, undecodable, or a ``.npy`` array of another rank.
    """
    import numpy as np

    if not os.path.isfile(path):
        raise ValueError(f"predict: image file {path!r} does not exist.")
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".npy":
        try:
            array = np.load(path, allow_pickle=False)
        except ValueError as error:
            raise ValueError(f"predict: {path!r} is not a NumPy array file ({error}).") from None
        if array.ndim == 2 or (array.ndim == 3 and array.shape[-1] <= 4):
            return [(path, array.reshape(*array.shape[:2], -1))]
        if array.ndim in (3, 4):
            return [(f"{path}[{i}]", image.reshape(*image.shape[:2], -1)) for i, image in enumerate(array)]
        raise ValueError(
            f"predict: {path!r} holds an array of shape {array.shape}; expected one image (H, W) or (H, W, C), "
            "or a batch (N, H, W) or (N, H, W, C)."
        )
    if suffix in PICTURE_SUFFIXES:
        import tensorflow as tf

        try:
            picture = tf.io.decode_image(tf.io.read_file(path), expand_animations=False)
        except tf.errors.InvalidArgumentError as error:
            raise ValueError(f"predict: {path!r} is not a readable {suffix[1:].upper()} image ({error.message}).") from None
        return [(path, picture.numpy())]
    raise ValueError(f"predict: argument `IMAGE` expected a .png, .jpg, .jpeg, .gif, .bmp or .npy file, received {path!r}.")


def to_model_input(label, image, height, width, channels):
    """``image`` ``(H, W, C)`` as one input of a model taking ``(height, width, channels)``: float32 in [0, 1].

    Integers 0..255 are divided by 255, floats in [0, 1] kept; an alpha channel (C = 2 or 4) is
    dropped unless the model takes C channels; RGB becomes grey by luminance (:data:`LUMA`), grey
    becomes ``channels`` copies; a picture of another height or width is resized (bilinear,
    antialiased), which is said on stderr. ``None`` sizes accept any.

    Raises:
        ValueError: values outside those ranges, or channels that cannot be converted.
    """
    import numpy as np

    if np.issubdtype(image.dtype, np.integer) or image.dtype == bool:
        if image.size and (image.min() < 0 or image.max() > 255):
            raise ValueError(
                f"predict: {label} has integer values in [{image.min()}, {image.max()}]; expected 0..255 (divided by 255) or floats in [0, 1]."
            )
        values = image.astype("float32") / (1.0 if image.dtype == bool else 255.0)
    elif np.issubdtype(image.dtype, np.floating):
        if image.size and not (np.isfinite(image).all() and image.min() >= 0 and image.max() <= 1):
            raise ValueError(f"predict: {label} has float values in [{image.min()}, {image.max()}]; expected [0, 1] (or integers 0..255).")
        values = image.astype("float32")
    else:
        raise ValueError(f"predict: {label} has values of type {image.dtype}; expected integers 0..255 or floats in [0, 1].")
    found = values.shape[-1]
    if channels is not None and found != channels:
        if found in (2, 4):  # grey + alpha, RGBA
            values, found = values[..., : found - 1], found - 1
        if found == 3 and channels == 1:
            values = values @ np.asarray(LUMA, "float32")[:, None]
        elif found == 1:
            values = np.repeat(values, channels, axis=-1)
        elif found != channels:
            raise ValueError(f"predict: {label} has {found} channels; the model takes {channels} (1 or 3 are converted).")
    size = (height or values.shape[0], width or values.shape[1])
    if size != values.shape[:2]:
        import tensorflow as tf

        print(f"keras-capsules predict: {label} is {values.shape[0]}x{values.shape[1]}, resized to the model's {size[0]}x{size[1]}.", file=sys.stderr)
        values = tf.image.resize(values, size, antialias=True).numpy()
    return values


def _load(args):
    """``(model, names)``: the model, and whose class names its outputs have (a dataset, a Preset, or ``None``: indices)."""
    from keras_capsules import presets
    from keras_capsules.training.evaluation import training_record

    opened = presets.open_model(args.model)
    if opened is None:
        raise ValueError(
            f"predict: argument `MODEL` expected a .keras file or a preset MODEL/NAME (one of {', '.join(presets.available())}), "
            f"received {args.model!r}: no such file or preset."
        )
    model, key = opened
    if key is None:
        return model, args.dataset or training_record(args.model).get("dataset")
    return model, args.dataset or presets.get(*key)


def _predict(args):
    import numpy as np

    from keras_capsules import presets

    model, names = _load(args)
    shape = model.input_shape
    if not (isinstance(shape, tuple) and len(shape) == 4):
        raise ValueError(f"predict: {args.model} takes inputs of shape {shape}; predict needs one image input (batch, height, width, channels).")
    images = [image for path in args.images for image in read_images(path)]
    batch = np.stack([to_model_input(label, image, *shape[1:]) for label, image in images])
    scores = model.predict(batch, batch_size=args.batch_size, verbose=0)
    if not (isinstance(scores, np.ndarray) and scores.ndim == 2):
        returned = f"an array of shape {scores.shape}" if isinstance(scores, np.ndarray) else f"a {type(scores).__name__}"
        raise ValueError(f"predict: {args.model} returns {returned}; predict needs one output of class scores (batch, classes).")
    if names is None:
        unknown = f"class names unknown (no --dataset, no metrics.json next to {args.model}): class indices shown"
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
    return 0


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, received {text!r}")
    return value


def add_predict_command(commands):
    predict = commands.add_parser(
        "predict",
        help="the top classes of images (PNG, JPEG, .npy) under a .keras model or a preset, with class names",
        description="Prints, for every image, its top classes with their names and scores (capsule lengths or probabilities), "
        "best first, as lines SCORE CLASS NAME. MODEL is a .keras file or a preset written MODEL/NAME or MODEL:NAME, any case "
        "(e.g. EffCapsNet/mnist; `keras-capsules presets` lists them). Images are PNG, JPEG, GIF or BMP files, or .npy arrays "
        "(H, W), (H, W, C) or batches (N, H, W[, C]) of integers 0..255 or floats in [0, 1]; each is converted to the model's "
        "input: scaled to [0, 1], RGB to grey by luminance or grey to RGB, alpha dropped, and resized (bilinear) where its size "
        "differs, which is said on stderr.",
    )
    predict.add_argument("model", metavar="MODEL", help="a .keras file, or a preset MODEL/NAME or MODEL:NAME, e.g. EffCapsNet/mnist")
    predict.add_argument("images", metavar="IMAGE", nargs="+", help="PNG, JPEG, GIF, BMP or .npy files")
    predict.add_argument("--top-k", type=_positive_int, default=5, metavar="K", help="classes shown per image (default: 5 classes)")
    predict.add_argument(
        "--dataset", metavar="NAME",
        help="dataset whose class names to show (default: a preset's dataset; for a .keras file the one in the metrics.json "
        "next to it, else class indices)",
    )  # fmt: skip
    predict.add_argument("--batch-size", type=int, default=32, metavar="IMAGES", help="images per model call (default: 32 images)")
    predict.set_defaults(handler=_predict)
