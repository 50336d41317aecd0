"""Router registry: ``register_router``, ``unregister_router``, ``get`` and ``available`` (with capability filters)."""

import keras

from keras_capsules.serialization import register

_ROUTERS = {}
#: The pose kinds a router may declare in ``pose_kinds`` (a capsule layer's ``transform``).
POSE_KINDS = ("vector", "matrix")
#: The values of a router's ``coupling_sums_over``.
COUPLING_AXES = ("parents", "children")
#: ``available()``'s boolean filters and the router class attribute each one reads.
_FLAGS = {"iterative": "iterative", "initial_poses": "supports_initial_poses", "child_grid": "accepts_child_grid"}


def _check_capabilities(cls):
    """Validates the capability attributes a router class declares (see :class:`Router`)."""
    kinds = cls.pose_kinds
    if not isinstance(kinds, (tuple, list)) or not kinds or any(kind not in POSE_KINDS for kind in kinds):
        raise ValueError(
            f"register_router: {cls.__name__}.pose_kinds expected a non-empty tuple of {POSE_KINDS}, received {kinds!r}."
        )
    if cls.coupling_sums_over not in COUPLING_AXES:
        raise ValueError(
            f"register_router: {cls.__name__}.coupling_sums_over expected one of {COUPLING_AXES}, "
            f"received {cls.coupling_sums_over!r}."
        )
    for attribute in _FLAGS.values():
        if not isinstance(getattr(cls, attribute), bool):
            raise ValueError(
                f"register_router: {cls.__name__}.{attribute} expected True or False, received {getattr(cls, attribute)!r}."
            )


def register_router(name):
    """Class decorator: registers a :class:`Router` subclass under ``name`` and as a Keras serializable.

    Raises:
        ValueError: ``name`` is already registered, or a capability attribute of the class
            (``pose_kinds``, ``iterative``, ``supports_initial_poses``, ``accepts_child_grid``,
            ``coupling_sums_over``) is invalid.
    """

    def decorate(cls):
        if name in _ROUTERS:
            raise ValueError(f"register_router: router name {name!r} is already registered by {_ROUTERS[name]}.")
        _check_capabilities(cls)
        cls.router_name = name
        _ROUTERS[name] = register(cls)
        return cls

    return decorate


def unregister_router(name):
    """Removes ``name`` from the registry (``get``, ``available`` and the layers no longer know it); returns its class.

    The class stays a Keras serializable, and can be registered again.

    Raises:
        ValueError: ``name`` is not registered.
    """
    if name not in _ROUTERS:
        raise ValueError(f"unregister_router: argument `name` expected one of {available()}, received {name!r}.")
    return _ROUTERS.pop(name)


def available(pose=None, iterative=None, initial_poses=None, child_grid=None):
    """Sorted names of the registered routers, or of those with the given capabilities.

    Every filter left at ``None`` accepts every router; the others must all hold:

    Args:
        pose: ``"vector"`` or ``"matrix"``: routers whose ``pose_kinds`` include that pose kind.
        iterative: ``True`` for iterative routers, ``False`` for single-pass ones.
        initial_poses: ``True`` for routers that take initial parent poses (``supports_initial_poses``:
            what :class:`~keras_capsules.layers.ConcurrentRouting` needs), ``False`` for the others.
        child_grid: ``True`` for routers that take a convolutional layer's geometry
            (``accepts_child_grid``: EM and variational Bayes across positions), ``False`` for the others.

    Example::

        >>> routing.available(initial_poses=True)
        ['inverted_dot_product']
        >>> routing.available(pose="vector", iterative=False)
        ['fm_agreement', 'self_attention']

    Raises:
        ValueError: ``pose`` is not ``None`` or a pose kind, or a flag is not ``None``/``True``/``False``.
    """
    if pose is not None and pose not in POSE_KINDS:
        raise ValueError(f"routing.available: argument `pose` expected None or one of {POSE_KINDS}, received {pose!r}.")
    flags = {"iterative": iterative, "initial_poses": initial_poses, "child_grid": child_grid}
    for argument, value in flags.items():
        if value is not None and not isinstance(value, bool):
            raise ValueError(
                f"routing.available: argument `{argument}` expected None, True or False, received {value!r}."
            )
    return sorted(
        name
        for name, cls in _ROUTERS.items()
        if (pose is None or pose in cls.pose_kinds)
        and all(value is None or getattr(cls, _FLAGS[argument]) == value for argument, value in flags.items())
    )


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
            raise ValueError(
                f"routing.get: extra arguments {sorted(kwargs)} cannot be applied to an existing router instance."
            )
        return identifier
    if isinstance(identifier, dict):
        if "class_name" in identifier:
            return keras.saving.deserialize_keras_object(identifier)
        config = dict(identifier)
        if "name" not in config:
            raise ValueError(
                f"routing.get: a router config dict needs a 'name' key (one of {available()}), received {identifier!r}."
            )
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
