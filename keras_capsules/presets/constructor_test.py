"""``with_presets``: the wrapped constructors still name themselves when called with a wrong argument."""

import inspect

import pytest

from keras_capsules import applications

CONSTRUCTORS = sorted(
    {applications.get_configuration(name).constructor for name in applications.list_configurations()},
    key=lambda c: c.__name__,
)


def test_every_application_constructor_is_covered():
    assert {c.__name__ for c in CONSTRUCTORS} >= {
        "AgreementGLOM",
        "CapsNet",
        "ConsensusCapsNet",
        "EffCapsNet",
        "EffConvCapsNet",
        "FMCapsNet",
        "InvertedAttentionCapsNet",
        "MatrixCapsNet",
    }


@pytest.mark.parametrize("constructor", CONSTRUCTORS, ids=lambda c: c.__name__)
def test_unknown_keyword_and_too_many_positionals_name_the_constructor_and_its_arguments(constructor):
    name = constructor.__name__
    arguments = list(inspect.signature(constructor).parameters)
    assert arguments[:2] == ["include_top", "weights"]
    listed = r", ".join(arguments)
    with pytest.raises(
        TypeError, match=rf"^{name}\(\) got an unexpected keyword argument 'foo'; its arguments: {listed}\.$"
    ):
        constructor(foo=1)
    with pytest.raises(
        TypeError, match=rf"^{name}\(\) too many positional arguments; its arguments: include_top, weights, "
    ):
        constructor(*([None] * (len(arguments) + 1)))
