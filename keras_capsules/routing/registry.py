"""Router registry: ``get(name_or_config_or_instance)`` and ``available()``."""

import keras

from keras_capsules.serialization import register

_ROUTERS = {}


def register_router(name):
    """Class decorator: registers a :class:`Router` subclass under ``name`` and as a Keras serializable."""

    def decorate(cls):
        if name in _ROUTERS:
            raise ValueError(f"register_router: router name {name!r} is already registered by {_ROUTERS[name]}.")
        cls.router_name = name
        _ROUTERS[name] = register(cls)
        return cls

    return decorate


def available():
    """Sorted names of the registered routers."""
    return sorted(_ROUTERS)


def get(identifier, **kwargs):
    """Returns a new router.

    Args:
        identifier: a registered name (``"dynamic"``), a dict ``{"name": ..., **kwargs}``, a Keras
            serialization dict (``{"class_name": ..., "config": ...}``) or a ``Router`` instance
            (returned as is; ``kwargs`` must then be empty).
        **kwargs: constructor arguments, e.g. ``iterations=3``.

    Raises:
        ValueError: for an unknown name, naming the registered ones.
        TypeError: for anything else.
    """
    from keras_capsules.routing.base import Router

    if isinstance(identifier, Router):
        if kwargs:
            raise ValueError(f"routing.get: extra arguments {sorted(kwargs)} cannot be applied to an existing router instance.")
        return identifier
    if isinstance(identifier, dict):
        if "class_name" in identifier:
            return keras.saving.deserialize_keras_object(identifier)
        config = dict(identifier)
        if "name" not in config:
            raise ValueError(f"routing.get: a router config dict needs a 'name' key (one of {available()}), received {identifier!r}.")
        name = config.pop("name")
        config.update(kwargs)
        return get(name, **config)
    if isinstance(identifier, str):
        if identifier not in _ROUTERS:
            raise ValueError(f"routing.get: argument `router` expected one of {available()}, received {identifier!r}.")
        return _ROUTERS[identifier](**kwargs)
    raise TypeError(
        "routing.get: argument `router` expected a router name, a config dict or a Router instance, "
        f"received {type(identifier).__name__}: {identifier!r}."
    )
