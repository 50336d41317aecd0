"""Walking a model's layers through public attributes only (no private Keras APIs such as ``_flatten_layers``)."""

import keras


def sublayers(layer):
    """The layers directly inside ``layer``: a model's ``layers``, else the layers held in its public attributes
    (directly, or in lists, tuples and dicts), in attribute order, each once.

    On the PyTorch backend a layer is a torch ``Module``, which keeps the layers held directly as its children
    (``named_children``), apart from its other attributes: those come first, in their order, then the ones in
    lists, tuples and dicts.
    """
    if isinstance(layer, keras.Model):
        return list(layer.layers)
    found = []
    attributes = list(vars(layer).items())
    if hasattr(layer, "named_children"):  # PyTorch backend: a torch Module keeps the layers it holds directly apart
        attributes = list(layer.named_children()) + attributes
    for name, value in attributes:
        if name.startswith("_"):
            continue
        values = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else (value,)
        found.extend(
            v for v in values if isinstance(v, keras.layers.Layer) and v is not layer and not any(v is f for f in found)
        )
    return found


def all_layers(model):
    """Every layer nested in ``model`` (not ``model`` itself), depth first, parents before their sublayers, each once."""
    seen, ordered, stack = set(), [], list(reversed(sublayers(model)))
    while stack:
        layer = stack.pop()
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        ordered.append(layer)
        stack.extend(reversed(sublayers(layer)))
    return ordered
