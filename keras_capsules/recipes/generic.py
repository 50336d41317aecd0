"""The generic recipe of each application: how ``train`` trains it on a dataset no paper used, such as a user's folder of images.

Each starts from the application's paper recipe (:data:`HOME`) and changes what is tied to the paper's
dataset (:data:`CHANGES`, then :data:`COMMON`): 30 epochs, the ``"random_shift"`` augmentation (shifts
of up to 1/14 of the image side, any size and channels; no flips, which would be wrong for digits or
text), a batch of at most 32, a per-epoch exponential decay, and no reconstruction decoder (its
output layer grows with height × width × channels, 12,288 units at 64×64×3, and the papers' weights
for it were tuned on 28×28 digits). The test split, where the dataset has one, is evaluated once at
the end; otherwise nothing is. ``metrics.json`` records the resolved recipe, ``source`` included.
"""

import dataclasses

from keras_capsules.recipes.base import Recipe, available, get

#: The paper recipe ``(dataset, variant)`` each application's generic recipe starts from.
HOME = {
    "EffCapsNet": ("mnist", "default"),
    "CapsNet": ("mnist", "default"),
    "FMCapsNet": ("fashion_mnist", "light"),
    "MatrixCapsNet": ("smallnorb", "small"),
    "ConsensusCapsNet": ("smallnorb", "default"),
    "InvertedAttentionCapsNet": ("cifar10", "simple"),
    "AgreementGLOM": ("cifar10", "default"),
    "BaselineCNN": ("mnist", "default"),
    "VBCapsNet": ("smallnorb", "default"),
}
#: Every generic recipe's changes to its paper recipe.
COMMON = {"epochs": 30, "augmentation": "random_shift", "lr_decay_steps": None, "lr_floor": 0.0, "configuration": None}
#: Per application, the changes besides :data:`COMMON` (``model_kwargs`` replace the paper recipe's).
CHANGES = {
    "EffCapsNet": {"model_kwargs": {"variant": "mnist", "reconstruction": False}, "lr_floor": 5e-5},
    "CapsNet": {"model_kwargs": {"reconstruction": False}, "batch_size": 32},
    "FMCapsNet": {"model_kwargs": {"variant": "light"}, "batch_size": 32, "lr_decay": 0.96},
    "MatrixCapsNet": {"model_kwargs": {"variant": "small"}, "batch_size": 16},
    "ConsensusCapsNet": {"model_kwargs": {"router": "kernel"}, "batch_size": 16},
    # SGD 0.1 with steps at epochs 150 and 250 has no step within 30 epochs: Adam with a decay instead.
    "InvertedAttentionCapsNet": {
        "model_kwargs": {"variant": "cifar10-simple"},
        "optimizer": "adam",
        "learning_rate": 1e-3,
        "lr_schedule": "exponential",
        "lr_decay": 0.96,
        "lr_milestones": (),
        "momentum": 0.0,
        "weight_decay": None,
        "batch_size": 32,
    },  # fmt: skip
    # Batch 800 and a peak rate of 0.012 need a GPU; the rate scales with the batch (0.012 x 32 / 800).
    "AgreementGLOM": {"model_kwargs": {"classifier_activation": "softmax"}, "batch_size": 32, "learning_rate": 4.8e-4},
    "BaselineCNN": {"model_kwargs": {"variant": "matched"}},
    "VBCapsNet": {"batch_size": 32},
}
#: Applications without a paper recipe: their whole generic recipe.
STANDALONE = {
    # The official code's rate, batch and loss (RAdam 5e-4 with a one-cycle schedule, batch 20; cross-entropy on the
    # class logits a_out, here the log-odds of the activations the model outputs) with Adam, no decay.
    "HeinsenCapsNet": {
        "optimizer": "adam",
        "learning_rate": 5e-4,
        "lr_decay": 1.0,
        "loss": "log_odds_crossentropy",
        "batch_size": 20,
    },
    "EffConvCapsNet": {
        "optimizer": "adam",
        "learning_rate": 1e-3,
        "lr_decay": 0.96,
        "loss": "margin",
        "batch_size": 32,
    },
    # The official code's SGD 0.1 with steps at epochs 150 and 250 has no step within 30 epochs: Adam with a decay.
    "SRCapsNet": {
        "optimizer": "adam",
        "learning_rate": 1e-3,
        "lr_decay": 0.96,
        "loss": "crossentropy",
        "batch_size": 32,
    },
}


def generic(model, dataset, has_test=True):
    """The generic recipe of application ``model`` on ``dataset`` (see the module docstring).

    Args:
        model: application constructor name, e.g. ``"EffCapsNet"``.
        dataset: the dataset's registered name (a folder's, from ``datasets.register_folder``).
        has_test: whether ``dataset`` has a ``"test"`` split (evaluated once at the end).

    Raises:
        ValueError: ``model`` has no generic recipe (the message lists those that do).
    """
    eval_on = ("test",) if has_test else ()
    if model in STANDALONE:
        fields = {**COMMON, **STANDALONE[model]}
        return Recipe(
            model=model,
            dataset=dataset,
            eval_on=eval_on,
            variant="generic",
            source=f"generic recipe of {model} (no paper recipe)",
            **fields,
        )
    if model not in HOME:
        raise ValueError(
            f"recipes.generic: argument `model` expected one of {sorted({*HOME, *STANDALONE})}, received {model!r}."
        )
    home_dataset, variant = HOME[model]
    paper = get(model, home_dataset, variant)
    changes = {**COMMON, **CHANGES[model]}
    changes["batch_size"] = min(changes.get("batch_size", paper.batch_size), 32)
    described = ", ".join(f"{key}={value!r}" for key, value in changes.items() if key != "configuration")
    source = f"generic recipe of {model}: its {home_dataset}/{variant} paper recipe with {described}"
    return dataclasses.replace(paper, dataset=dataset, eval_on=eval_on, source=source, variant="generic", **changes)


def for_dataset(model, dataset, variant="default"):
    """``recipes.get(model, dataset, variant)``; for a dataset no paper used (a folder of images) without a recipe of
    its own, the application's generic recipe (:func:`generic`), its ``test`` split evaluated when it has one."""
    from keras_capsules import datasets

    info = datasets.info(dataset)
    if (
        info.stratified_holdout
        and (model, dataset, variant) not in available(model)
        and variant in ("default", "generic")
    ):
        return generic(model, dataset, has_test="test" in info.splits)
    return get(model, dataset, variant)
