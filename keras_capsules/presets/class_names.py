"""The class names a model carries: ``model.class_names``, checked against the model's output units."""

from collections.abc import Iterable
from typing import Any

from keras_capsules import errors


def output_units(model: Any) -> int | None:
    """The size of ``model``'s single ``(batch, units)`` output (its classes, with the top), or ``None``.

    ``None`` when it is not known: several outputs, an output of another rank (an ``include_top=False``
    feature map), an unknown size, or a model without symbolic outputs.
    """
    outputs = getattr(model, "outputs", None)
    if not outputs or len(outputs) != 1 or len(outputs[0].shape) != 2:
        return None
    return outputs[0].shape[-1]


def check_class_names(
    owner: Any, names: Iterable[str] | None, units: int | None = None, argument: str = "class_names"
) -> tuple[str, ...] | None:
    """``names`` as a tuple of strings (``None`` stays ``None``), one per output unit when ``units`` is known.

    Args:
        owner: the model or function (a string) errors name.
        names: the class names in output order, or ``None``.
        units: the model's output units (:func:`output_units`), or ``None`` when unknown.
        argument: how errors name ``names``.

    Raises:
        TypeError: ``names`` is a single string or holds something other than strings.
        ValueError: ``names`` is empty or its length differs from ``units``.
    """
    if names is None:
        return None
    if isinstance(names, (str, bytes)) or not isinstance(names, Iterable):
        errors.fail(owner, argument, "None or a sequence of strings (one per class)", names, TypeError)
    names = tuple(names)
    wrong = [name for name in names if not isinstance(name, str)]
    if wrong:
        errors.fail(
            owner,
            argument,
            "a sequence of strings (one per class)",
            f"an item {wrong[0]!r} of type {type(wrong[0]).__name__}",
            TypeError,
        )
    if not names:
        errors.fail(owner, argument, "None or at least one name", names)
    if units is not None and len(names) != units:
        errors.fail(owner, argument, f"{units} names (one per output unit of the model: its classes)", list(names))
    return names


def class_names_of(model: Any) -> tuple[str, ...] | None:
    """The class names ``model`` carries, in output order, or ``None``.

    A :class:`~keras_capsules.applications.CapsuleClassifier` keeps them in ``model.class_names`` (and in
    its ``.keras`` file); ``presets.load`` and ``MODEL(weights=FOLDER)`` set them from a preset folder.
    """
    names = getattr(model, "class_names", None)
    return None if names is None else tuple(names)
