"""Routers: every published routing algorithm behind one interface.

``keras_capsules.routing.get(name, **kwargs)`` returns a :class:`Router`; ``available()`` lists the names.
"""

from keras_capsules.routing.base import Router
from keras_capsules.routing.registry import available, get, register_router
from keras_capsules.routing.dynamic import DynamicRouter
from keras_capsules.routing.self_attention import SelfAttentionRouter

__all__ = [
    "DynamicRouter",
    "Router",
    "SelfAttentionRouter",
    "available",
    "get",
    "register_router",
]
