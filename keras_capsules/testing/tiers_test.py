"""The default tier keeps, per constructor, the configuration with the fewest parameters (hand-made registry)."""

import types

from keras_capsules import applications
from keras_capsules.testing.tiers import one_per_constructor


def test_one_per_constructor_keeps_the_smallest_configuration_of_each_constructor(monkeypatch):
    def constructor(name):
        return types.SimpleNamespace(__name__=name)

    registry = {
        "A/big": types.SimpleNamespace(constructor=constructor("A"), trainable_params=10),
        "A/small": types.SimpleNamespace(constructor=constructor("A"), trainable_params=5),
        "B/unknown": types.SimpleNamespace(constructor=constructor("B"), trainable_params=None),
        "C/only": types.SimpleNamespace(constructor=constructor("C"), trainable_params=1),
    }
    monkeypatch.setattr(applications, "get_configuration", registry.__getitem__)
    params = one_per_constructor(list(registry), large_constructors=("C",))
    assert [p.values[0] for p in params] == list(registry)  # order kept
    tiers = {p.values[0]: [m.name for m in p.marks] for p in params}
    assert tiers == {"A/big": ["large"], "A/small": [], "B/unknown": [], "C/only": ["large"]}
