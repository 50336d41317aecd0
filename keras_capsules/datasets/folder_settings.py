"""The size and channels a folder of images is read at: given, else inferred from the images' stored sizes and modes."""

import collections

import numpy as np

from keras_capsules import errors

#: The longest side, in pixels, of a size inferred from the images: a folder of photos (768x1024) is read at
#: 96x128, not at a size whose model would not fit in memory (EffCapsNet at 768x1024x3 has 1.15 billion
#: weights, 4.6 GB before its optimizer state). Given sizes are kept.
DEFAULT_MAX_SIDE = 128


def inferred(stored, image_size, channels):
    """The size and channels (given, else inferred from ``stored``, the decoded images' ``(h, w, c, 16-bit)``) and why.

    The inferred size is the most common one (ties: the larger area, then the larger height), scaled
    down, aspect ratio kept, when its longer side exceeds :data:`DEFAULT_MAX_SIDE`.
    """
    if image_size is None:
        sizes = collections.Counter(map(tuple, stored[:, :2].tolist()))
        common = max(sizes, key=lambda size: (sizes[size], size[0] * size[1], size[0]))
        image_size, size_reason = common, f"the most common size ({sizes[common]} of {len(stored)} images)"
        if max(common) > DEFAULT_MAX_SIDE:
            scale = DEFAULT_MAX_SIDE / max(common)
            image_size = tuple(max(1, round(side * scale)) for side in common)
            size_reason = (
                f"the most common size {common[0]}x{common[1]} ({sizes[common]} of {len(stored)} images) scaled down to "
                f"a longer side of {DEFAULT_MAX_SIDE} px, aspect ratio kept (image_size, CLI --image-size H W, reads "
                "another size)"
            )
    else:
        size_reason = "given"
    if channels is None:
        color = int(np.sum(stored[:, 2] >= 3))
        channels = 3 if color else 1
        channels_reason = f"{color} of {len(stored)} images are colour" if color else "every image is gray"
    else:
        channels_reason = "given"
    return tuple(int(s) for s in image_size), channels, size_reason, channels_reason


def check_settings(owner, image_size, channels):
    """``(image_size, channels)`` checked: ``None`` or two positive integers; ``None``, 1 or 3."""
    if image_size is not None:
        if not (
            isinstance(image_size, (tuple, list))
            and len(image_size) == 2
            and all(errors.is_integer(s) and s > 0 for s in image_size)
        ):
            errors.fail(owner, "image_size", "None (inferred) or (height, width), two positive integers", image_size)
        image_size = (int(image_size[0]), int(image_size[1]))
    if channels is not None:
        errors.check_one_of(owner, "channels", channels, (1, 3))
    return image_size, channels
