"""The test suite's tiers: the default tier (CI) and ``large`` (``pytest --run-large``); see conftest.py."""

import pytest

#: Marks a test (or a parameter) as part of the large tier only.
large = pytest.mark.large
#: Constructors whose every configuration takes 10-50 s a test on 2 cores (tracing their routing loops and
#: GLOM iterations): per-configuration contract tests run them in the large tier.
SLOW_CONSTRUCTORS = ("AgreementGLOM", "ConsensusCapsNet", "MatrixCapsNet")


def smallest_per_constructor(names):
    """The configuration with the fewest trainable parameters of each constructor among ``names`` (a set of names)."""
    from keras_capsules import applications  # here, so that marking a test imports no backend

    smallest = {}
    for name in names:
        entry = applications.get_configuration(name)
        size = entry.trainable_params if entry.trainable_params is not None else float("inf")
        key = entry.constructor.__name__
        if key not in smallest or size < smallest[key][0]:
            smallest[key] = (size, name)
    return {name for _, name in smallest.values()}


def one_per_constructor(names, large_constructors=SLOW_CONSTRUCTORS):
    """``names`` as pytest parameters: per constructor, the configuration with the fewest parameters stays in the
    default tier and every other configuration is marked ``large``.

    Args:
        names: registered configuration names (``applications.list_configurations()`` or a subset).
        large_constructors: constructor names whose every configuration is marked ``large``.
    Returns:
        A list of ``pytest.param``, in the order of ``names``.
    """
    from keras_capsules import applications

    kept = {
        name
        for name in smallest_per_constructor(names)
        if applications.get_configuration(name).constructor.__name__ not in large_constructors
    }
    return [pytest.param(name, id=name) if name in kept else pytest.param(name, id=name, marks=large) for name in names]
