"""keras-tuner HyperModels for the capsule applications (needs the ``tuning`` extra: keras-tuner + tensorboard)."""

import inspect

from keras_capsules import applications, errors, recipes, routing


def _import_keras_tuner():
    try:
        import keras_tuner
    except ImportError as error:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "keras_capsules.tuning needs keras-tuner and tensorboard: pip install 'keras-capsules[tuning]'"
        ) from error
    return keras_tuner


def _base():
    return _import_keras_tuner().HyperModel


class CapsuleHyperModel(_base()):
    """Search space over an application's router, routing iterations, capsule sizes, learning rate and loss weight.

    Every hyperparameter defaults to the paper setting, so ``build(HyperParameters())`` is the paper model:

    - ``router``: ``Choice`` over ``routers`` (default: the application's own router).
    - ``routing_iterations``: ``Int(1, 5)``, default 3, active only for iterative routers.
    - ``class_capsule_dim`` / ``primary_capsule_dim``: ``Choice`` when the constructor has them.
    - ``learning_rate``: log-uniform ``Float`` around the recipe's rate (default: the recipe's).
    - ``reconstruction_weight``: ``Float`` when the model has a decoder (default: the paper's).

    Args:
        application: constructor name in ``keras_capsules.applications``.
        input_shape: image shape; ``None`` uses the application default.
        classes: number of classes (required).
        dataset: dataset name used to look up the recipe (optimizer, learning rate, loss; a folder of images:
            the application's generic recipe).
        routers: router names to search; ``None`` means the application default and ``"dynamic"``.
        application_kwargs: fixed constructor arguments (``variant``, ``reconstruction``, ...).
        name, tunable: as in ``keras_tuner.HyperModel``.
    """

    def __init__(
        self,
        application="EffCapsNet",
        input_shape=None,
        classes=None,
        dataset="mnist",
        routers=None,
        application_kwargs=None,
        name=None,
        tunable=True,
    ):
        super().__init__(name=name or f"hyper_{application}", tunable=tunable)
        constructor = getattr(applications, application, None)
        if not callable(constructor):
            errors.fail(
                "CapsuleHyperModel", "application", "an application constructor name such as 'EffCapsNet'", application
            )
        if classes is None:
            errors.fail("CapsuleHyperModel", "classes", "the number of classes", classes)
        self.application = application
        self.constructor = constructor
        self.input_shape = input_shape
        self.classes = classes
        self.recipe = recipes.for_dataset(application, dataset)
        self.application_kwargs = {**self.recipe.model_kwargs, **(application_kwargs or {})}
        self.parameters = inspect.signature(constructor).parameters
        default_router = self._default_router()
        routers = list(routers) if routers else list(dict.fromkeys([default_router, "dynamic"]))
        unknown = [r for r in routers if r not in routing.available()]
        if unknown:
            errors.fail("CapsuleHyperModel", "routers", f"names from {routing.available()}", unknown)
        self.routers = routers
        self.default_router = default_router if default_router in routers else routers[0]

    def _default_router(self):
        explicit = self.application_kwargs.get("router")
        if isinstance(explicit, str):
            return explicit
        probe = self.constructor(classes=self.classes, input_shape=self.input_shape, **self.application_kwargs)
        routers = [layer.router.router_name for layer in probe.layers if hasattr(layer, "router")]
        return routers[-1] if routers else "dynamic"

    def build(self, hp):
        kwargs = dict(self.application_kwargs)
        if "router" in self.parameters:
            router = hp.Choice("router", self.routers, default=self.default_router)
            kwargs["router"] = router
            iterative = [r for r in self.routers if r in routing.available(iterative=True)]
            if "routing_iterations" in self.parameters and iterative:
                with hp.conditional_scope("router", iterative):
                    if router in iterative:
                        kwargs["routing_iterations"] = hp.Int("routing_iterations", 1, 5, default=3)
        if "class_capsule_dim" in self.parameters:
            kwargs["class_capsule_dim"] = hp.Choice("class_capsule_dim", [8, 16, 32], default=16)
        if "primary_capsule_dim" in self.parameters:
            kwargs["primary_capsule_dim"] = hp.Choice("primary_capsule_dim", [4, 8, 16], default=8)
        if kwargs.get("reconstruction") and "reconstruction_weight" in self.parameters:
            default = self.parameters["reconstruction_weight"].default
            kwargs["reconstruction_weight"] = hp.Float(
                "reconstruction_weight", default / 10, default * 10, sampling="log", default=default
            )
        rate = self.recipe.learning_rate
        learning_rate = hp.Float("learning_rate", rate / 10, rate * 10, sampling="log", default=rate)
        model = self.constructor(classes=self.classes, input_shape=self.input_shape, **kwargs)
        model.compile(
            optimizer=self.recipe.replace(learning_rate=learning_rate).make_optimizer(),
            loss=self.recipe.make_loss(),
            metrics=["accuracy"],
        )
        return model


def HyperCapsNet(input_shape=None, classes=10, **kwargs):
    """:class:`CapsuleHyperModel` for :func:`~keras_capsules.applications.CapsNet`."""
    return CapsuleHyperModel("CapsNet", input_shape=input_shape, classes=classes, **kwargs)


def HyperEffCapsNet(input_shape=None, classes=10, **kwargs):
    """:class:`CapsuleHyperModel` for :func:`~keras_capsules.applications.EffCapsNet`."""
    return CapsuleHyperModel("EffCapsNet", input_shape=input_shape, classes=classes, **kwargs)
