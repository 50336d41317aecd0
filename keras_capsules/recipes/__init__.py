"""Paper training recipes: optimizer, learning-rate schedule, loss, batch size, epochs and augmentation per (model, dataset).

``keras_capsules.recipes.get(model, dataset, variant="default")`` returns a :class:`Recipe` (``for_dataset``: the
generic recipe for a folder of images); every field
can be overridden with ``recipe.replace(...)`` (the ``keras-capsules train`` flags do exactly that).
Every module of this package registers its paper's recipes when imported; a multi-stage recipe
(GLOM's contrastive pre-training, then its head) lists :class:`Stage` records in ``Recipe.stages``.
"""

import importlib
import pkgutil

from keras_capsules.recipes.base import Recipe, Stage, available, get, register_recipe
from keras_capsules.recipes.generic import for_dataset

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "base" and not _module.name.endswith("_test"):
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["Recipe", "Stage", "available", "for_dataset", "get", "register_recipe"]
