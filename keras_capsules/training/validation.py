"""The validation hold-out of a training run: which training examples are held out, and how many.

Every run of :func:`keras_capsules.training.train` trains on its training split minus a fixed
validation hold-out and reports validation accuracy after every epoch; decisions about a run
(continue, stop, change the schedule, pick a seed) read those figures, and the test set is evaluated
once, at the end. The hold-out depends only on the split's size, its own size and ``VALIDATION_SEED``,
never on the training seed, so every seed of a recipe holds out the same images.
"""

import numpy as np

from keras_capsules import errors

#: Seed of the hold-out's draw (fixed; independent of the training seed).
VALIDATION_SEED = 0
#: The default hold-out: this many examples, or a tenth of a smaller split.
DEFAULT_VALIDATION_EXAMPLES = 5000


def default_size(split_size):
    """The default hold-out size of a training split of ``split_size`` examples: ``min(5,000, split_size // 10)``."""
    return min(DEFAULT_VALIDATION_EXAMPLES, split_size // 10)


def resolve_size(requested, split_size, owner="train"):
    """The hold-out size: ``requested`` (``0`` turns validation off) or, for ``None``, :func:`default_size`.

    Raises:
        ValueError: ``requested`` is not an integer in ``[0, split_size)``.
    """
    if requested is None:
        return default_size(split_size)
    if not errors.is_integer(requested) or not 0 <= requested < split_size:
        errors.fail(owner, "validation_examples", f"None or an integer in [0, {split_size}) (the training split's size)", requested)
    return int(requested)


def split_indices(split_size, examples, seed=VALIDATION_SEED):
    """Indices of the examples trained on and of the hold-out, both sorted and disjoint.

    Args:
        split_size: examples in the training split.
        examples: hold-out size (``0``: nothing held out).
        seed: seed of the draw.

    Returns:
        ``(train_indices, validation_indices)``: ``int64`` arrays of ``split_size - examples`` and
        ``examples`` indices; together they are ``range(split_size)``.
    """
    held_out = np.zeros(split_size, dtype=bool)
    held_out[np.random.default_rng(seed).permutation(split_size)[:examples]] = True
    return np.flatnonzero(~held_out), np.flatnonzero(held_out)


def record(examples, seed=VALIDATION_SEED, reason=None):
    """What ``metrics.json`` records about the hold-out: ``{"examples", "seed", "selection"}`` (and ``reason`` when off)."""
    if examples == 0:
        return {"examples": 0, "seed": None, "selection": "none", "reason": reason or "validation_examples=0"}
    return {"examples": int(examples), "seed": seed, "selection": "uniform draw without replacement from the training split"}
