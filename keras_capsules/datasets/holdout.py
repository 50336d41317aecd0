"""The validation hold-out of a training run: which training examples are held out, and how many.

Every run of :func:`keras_capsules.training.train` trains on its training split minus a fixed
validation hold-out and reports validation accuracy after every epoch; decisions about a run
(continue, stop, change the schedule, pick a seed) read those figures, and the test set is evaluated
once, at the end. The hold-out depends only on the split's size, its own size and ``VALIDATION_SEED``,
never on the training seed, so every seed of a recipe holds out the same images.

Datasets marked ``stratified_holdout`` (a user's folder of images, whose classes may be small and
uneven) hold out each class's share instead (:func:`stratified_split_indices`); the labels then
enter the draw too.
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
        errors.fail(
            owner,
            "validation_examples",
            f"None or an integer in [0, {split_size}) (the training split's size)",
            requested,
        )
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


def stratified_counts(class_counts, examples):
    """How many examples each class gives to a stratified hold-out of ``examples`` (largest remainders).

    Class ``c`` of ``n_c`` of the ``N`` examples is owed ``examples * n_c / N``: it gives the whole part,
    and the examples still missing go one each to the classes with the largest fractional parts (ties:
    the lower class first), passing over a class that would be left without a training example, and
    again in that order while some are missing. So the counts add up to ``examples``, each is within
    one of the class's share where the cap allows, and every class keeps at least one training
    example while ``examples <= N - classes`` (beyond that, classes are emptied in the same order).

    Args:
        class_counts: examples per class, ``(classes,)`` positive integers.
        examples: hold-out size, in ``[0, N)``.

    Returns:
        ``int64 (classes,)``: the hold-out's examples per class, summing to ``examples``.
    """
    counts = np.asarray(class_counts, dtype=np.int64)
    total = int(counts.sum())
    if not errors.is_integer(examples) or not 0 <= examples <= total:
        errors.fail(
            "stratified_counts", "examples", f"an integer in [0, {total}] (the examples of all classes)", examples
        )
    owed = examples * counts
    quota = owed // total
    caps = counts - 1 if examples <= total - len(counts) else counts
    order = sorted(range(len(counts)), key=lambda c: (-(owed[c] % total), c))
    missing = examples - int(quota.sum())
    while missing:
        for c in order:
            if missing and quota[c] < caps[c]:
                quota[c] += 1
                missing -= 1
    return quota


def stratified_split_indices(labels, examples, seed=VALIDATION_SEED):
    """:func:`split_indices` with each class holding out its :func:`stratified_counts` share.

    Class ``c`` holds out its first ``stratified_counts(...)[c]`` examples in the order of the same
    seeded permutation of ``range(N)`` that :func:`split_indices` draws.

    Args:
        labels: ``(N,)`` integer class labels (any values; classes are the distinct values, sorted).
        examples: hold-out size (``0``: nothing held out).
        seed: seed of the draw.

    Returns:
        ``(train_indices, validation_indices)``: sorted, disjoint ``int64`` arrays covering ``range(N)``.
    """
    labels = np.asarray(labels)
    classes, class_of, class_counts = np.unique(labels, return_inverse=True, return_counts=True)
    quota = stratified_counts(class_counts, examples)
    permutation = np.random.default_rng(seed).permutation(len(labels))
    drawn_classes = class_of[permutation]
    grouped = np.argsort(drawn_classes, kind="stable")  # positions in the permutation, class by class, in draw order
    rank = np.empty(len(labels), dtype=np.int64)
    rank[grouped] = np.arange(len(labels)) - np.searchsorted(drawn_classes[grouped], drawn_classes[grouped])
    held_out = np.zeros(len(labels), dtype=bool)
    held_out[permutation[rank < quota[drawn_classes]]] = True
    return np.flatnonzero(~held_out), np.flatnonzero(held_out)


def stratified_record(labels, validation_indices, class_names, seed=VALIDATION_SEED):
    """:func:`record` of a :func:`stratified_split_indices` hold-out, with its examples per class.

    Args:
        labels: ``(N,)`` class indices ``0 .. len(class_names) - 1`` of the training split.
        validation_indices: the hold-out's indices into ``labels``.
        class_names: names in label order (the keys of ``per_class``).
    """
    if len(validation_indices) == 0:
        return record(0, reason="validation_examples=0")
    held = np.bincount(np.asarray(labels)[validation_indices], minlength=len(class_names))
    return {
        "examples": int(len(validation_indices)),
        "seed": seed,
        "selection": "stratified by class: each class's share, largest remainders, a training example kept per class",
        "stratified": True,
        "per_class": {name: int(count) for name, count in zip(class_names, held)},
    }


def record(examples, seed=VALIDATION_SEED, reason=None):
    """What ``metrics.json`` records about the hold-out: ``{"examples", "seed", "selection"}`` (and ``reason`` when off)."""
    if examples == 0:
        return {"examples": 0, "seed": None, "selection": "none", "reason": reason or "validation_examples=0"}
    return {
        "examples": int(examples),
        "seed": seed,
        "selection": "uniform draw without replacement from the training split",
    }
