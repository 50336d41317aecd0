"""Routers: every published routing algorithm behind one interface.

``keras_capsules.routing.get(name, **kwargs)`` returns a :class:`Router`; ``available()`` lists the names,
``available(pose="matrix", initial_poses=True, ...)`` those of the routers with the capabilities a model
needs (each router class declares them: see :class:`Router`);
``resolve(spec, routing_iterations)`` is how every capsule layer and application turns a router spec
(name, config dict or instance) into a fresh router.
"""

from keras_capsules.routing.base import Router
from keras_capsules.routing.dynamic import DynamicRouter
from keras_capsules.routing.em import EMRouter
from keras_capsules.routing.fm_agreement import FMAgreementRouter
from keras_capsules.routing.heinsen import HeinsenRouter
from keras_capsules.routing.inverted_dot_product import InvertedDotProductRouter
from keras_capsules.routing.kernel import KernelRouter
from keras_capsules.routing.lstm import LSTMRouter
from keras_capsules.routing.registry import available, get, register_router, unregister_router
from keras_capsules.routing.resolve import resolve, router_name
from keras_capsules.routing.self_attention import SelfAttentionRouter
from keras_capsules.routing.self_routing import SelfRoutingRouter
from keras_capsules.routing.variational_bayes import VariationalBayesRouter

__all__ = [
    "DynamicRouter",
    "EMRouter",
    "FMAgreementRouter",
    "HeinsenRouter",
    "InvertedDotProductRouter",
    "KernelRouter",
    "LSTMRouter",
    "Router",
    "SelfAttentionRouter",
    "SelfRoutingRouter",
    "VariationalBayesRouter",
    "available",
    "get",
    "register_router",
    "resolve",
    "router_name",
    "unregister_router",
]
