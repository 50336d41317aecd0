"""``resolve``: the one way a capsule layer or an application turns a router spec into a ``Router``.

A spec is a registered name (``"dynamic"``), a config dict (``{"name": "dynamic", "iterations": 2}``),
a Keras serialisation dict, or a :class:`Router` instance. Every call returns a **new** router:
an instance is a template, cloned from its config (layer name included; its weights are neither
shared nor copied), so one spec can serve several layers. A serialisation dict of a built router
(what a layer's ``get_config`` holds) gives a router built for the same shapes.

Precedence, lowest to highest: the application's ``defaults`` (e.g. a paper setting of that router)
< the spec's own arguments < the application's ``overrides`` (layer geometry it must impose) <
``routing_iterations``. ``routing_iterations=None`` keeps the router's own iterations (its spec's,
else its class default); any other value replaces them, and a single-pass router refuses a value
other than 1.
"""

import keras

from keras_capsules.routing.base import Router
from keras_capsules.routing.registry import available, get


def _spec_config(router):
    """``(name, config, template)`` of a spec: ``config`` without the router's registered name; ``template``
    the router a serialisation dict describes (built from its ``build_config``, if any), else ``None``."""
    template = None
    if isinstance(router, dict) and "class_name" in router:
        router = template = keras.saving.deserialize_keras_object(router)
    if isinstance(router, Router):
        return type(router).router_name, router.get_config(), template
    if isinstance(router, str):
        return router, {}, None
    if isinstance(router, dict):
        config = dict(router)
        if "name" not in config:
            raise ValueError(f"a router config dict needs a 'name' key (one of {available()}), received {router!r}")
        return config.pop("name"), config, None
    raise TypeError(
        f"expected a router name, a config dict or a Router instance, received {type(router).__name__}: {router!r}"
    )


def router_name(router):
    """The registered name of a router spec (name, config dict, serialisation dict or instance)."""
    return _spec_config(router)[0]


def resolve(router, routing_iterations=None, owner="routing.resolve", defaults=None, overrides=None):
    """A new :class:`Router` from a spec (see the module docstring for the precedence).

    Args:
        router: a registered name, a config dict, a Keras serialisation dict or a ``Router`` instance.
        routing_iterations: ``None`` (the router's own iterations) or the iterations to use.
        owner: the layer or constructor name that errors name.
        defaults: router arguments that apply unless the spec sets them.
        overrides: router arguments that replace the spec's.

    Raises:
        ValueError: an unknown router name, a dict without ``"name"``, or arguments the router
            refuses (e.g. ``routing_iterations=3`` for a single-pass router), naming ``owner``.
        TypeError: a spec of another type.
    """
    try:
        name, config, template = _spec_config(router)
        config = {**(defaults or {}), **config, **(overrides or {})}
        if routing_iterations is not None:
            config["iterations"] = routing_iterations
        resolved = get(name, **config)
    except (ValueError, TypeError) as error:
        where = owner if isinstance(owner, str) else f"{type(owner).__name__} '{owner.name}'"
        raise type(error)(f"{where}: argument `router`: {error}") from None
    if template is not None and template.built:
        # A saved router (a layer's from_config): built again for the shapes it was built for.
        resolved.build_from_config(template.get_build_config())
    return resolved
