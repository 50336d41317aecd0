"""Image files as model inputs for ``keras-capsules predict``: PNG, JPEG, GIF, BMP pictures and ``.npy`` arrays, read and converted.

Imports TensorFlow only to decode or resize a picture.
"""

import os
import sys

#: Picture files, decoded by ``tf.io.decode_image`` (GIF: the first frame).
PICTURE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".bmp", ".webp")
#: ITU-R BT.601 luma weights of R, G, B (those of ``tf.image.rgb_to_grayscale``).
LUMA = (0.299, 0.587, 0.114)


def image_files(path):
    """``[path]`` for a file; for a folder, the picture and ``.npy`` files in it and in its sub-folders, sorted by
    path (hidden files and folders, whose names start with ``.``, and other files left out).

    Raises:
        ValueError: a folder without such a file.
    """
    if not os.path.isdir(path):
        return [path]
    found = []
    for folder, subfolders, names in os.walk(path):
        subfolders[:] = [name for name in subfolders if not name.startswith(".")]  # hidden folders not entered
        suffixes = (*PICTURE_SUFFIXES, ".npy")
        found += [
            os.path.join(folder, name)
            for name in names
            if not name.startswith(".") and os.path.splitext(name)[1].lower() in suffixes
        ]
    found.sort()
    if not found:
        raise ValueError(
            f"predict: argument `IMAGE` expected image files or folders holding them (PNG, JPEG, GIF, BMP, WebP or "
            f".npy), received {path!r}, a folder without one."
        )
    return found


def read_images(path):
    """The images in file ``path``: ``[(label, array (H, W, C)), ...]``, one per picture or per array of a ``.npy`` batch.

    A ``.npy`` file holds one image ``(H, W)`` or ``(H, W, C)`` with ``C`` in 1..4, or a batch
    ``(N, H, W)`` or ``(N, H, W, C)`` whose images are labelled ``path[i]`` (a 3-D array is one
    image when its last axis has at most 4 entries, else a batch).

    Raises:
        ValueError: the file is missing, of another kind or undecodable, or a ``.npy`` array of
            another rank or without a pixel (no images).
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
        if array.ndim not in (2, 3, 4):
            raise ValueError(
                f"predict: {path!r} holds an array of shape {array.shape}; expected one image (H, W) or (H, W, C), "
                "or a batch (N, H, W) or (N, H, W, C)."
            )
        if array.size == 0:
            raise ValueError(f"predict: {path!r} holds no images: its array of shape {array.shape} is empty.")
        if array.ndim == 2 or (array.ndim == 3 and array.shape[-1] <= 4):
            return [(path, array.reshape(*array.shape[:2], -1))]
        return [(f"{path}[{i}]", image.reshape(*image.shape[:2], -1)) for i, image in enumerate(array)]
    if suffix in PICTURE_SUFFIXES:
        import tensorflow as tf

        try:
            picture = tf.io.decode_image(tf.io.read_file(path), expand_animations=False)
        except tf.errors.OpError:
            raise ValueError(
                f"predict: {path!r} is not a readable {suffix[1:].upper()} image: it does not decode (corrupt, truncated, "
                "or another format under that extension)."
            ) from None
        return [(path, picture.numpy())]
    raise ValueError(
        f"predict: argument `IMAGE` expected a .png, .jpg, .jpeg, .gif, .bmp, .webp or .npy file, received {path!r}."
    )


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
            raise ValueError(
                f"predict: {label} has float values in [{image.min()}, {image.max()}]; expected [0, 1] (or integers 0..255)."
            )
        values = image.astype("float32")
    else:
        raise ValueError(
            f"predict: {label} has values of type {image.dtype}; expected integers 0..255 or floats in [0, 1]."
        )
    found = values.shape[-1]
    if channels is not None and found != channels:
        if found in (2, 4):  # grey + alpha, RGBA
            values, found = values[..., : found - 1], found - 1
        if found == 3 and channels == 1:
            values = values @ np.asarray(LUMA, "float32")[:, None]
        elif found == 1:
            values = np.repeat(values, channels, axis=-1)
        elif found != channels:
            raise ValueError(
                f"predict: {label} has {found} channels; the model takes {channels} (1 or 3 are converted)."
            )
    size = (height or values.shape[0], width or values.shape[1])
    if size != values.shape[:2]:
        import tensorflow as tf

        print(
            f"keras-capsules predict: {label} is {values.shape[0]}x{values.shape[1]}, resized to the model's {size[0]}x{size[1]}.",
            file=sys.stderr,
        )
        values = tf.image.resize(values, size, antialias=True).numpy()
    return values
