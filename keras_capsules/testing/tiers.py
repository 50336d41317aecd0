"""The test suite's tiers: the default tier (CI) and ``large`` (``pytest --run-large``); see conftest.py."""

import pytest

#: Marks a test (or a parameter) as part of the large tier only.
large = pytest.mark.large
#: Constructors whose every configuration takes 10-50 s a test on 2 cores (tracing their routing loops and
#: GLOM iterations): per-configuration contract tests run them in the large tier.
SLOW_CONSTRUCTORS = ("AgreementGLOM", "ConsensusCapsNet", "MatrixCapsNet")


def one_per_constructor(names, large_constructors=SLOW_CONSTRUCTORS):
    """``names`` as pytest parameters: per constructor, the configuration with the fewest parameters stays in the
    default tier and every other configuration is marked ``large``.

    Args:
        names: registered configuration names (``applications.list_configurations()`` or a subset).
        large_constructors: constructor names whose every configuration is marked ``large``.
    Returns:
        A list of ``pytest.param``, in the order of ``names``.
    """
    from keras_capsules import applications  # here, so that marking a test imports no backend

    cheapest = {}
    for name in names:
        entry = applications.get_configuration(name)
        key = entry.constructor.__name__
        size = entry.trainable_params if entry.trainable_params is not None else float("inf")
        if key not in cheapest or size < cheapest[key][0]:
            cheapest[key] = (size, name)
    kept = {name for key, (_, name) in cheapest.items() if key not in large_constructors}
    return [pytest.param(name, id=name) if name in kept else pytest.param(name, id=name, marks=large) for name in names]
