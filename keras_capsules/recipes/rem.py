"""REM recipes (Renzulli, Tartaglione & Grangetto; docs/reference/rem.md#pruning), variant ``"rem"``.

REM trains DR-CapsNet (``CapsNet`` without decoder) and Efficient-CapsNet with Adam 1e-3, x0.99 per
epoch, batch 128 and the margin loss; the pruning itself is ``keras_capsules.training.pruning``.
The recipes stop after 100 epochs, the length REM's configs name; REM's code itself trains on until
200 epochs pass without a validation-loss improvement (a budget choice here: ``--epochs`` trains longer,
resuming the schedule, which depends on the epoch only).
The novel-viewpoint runs on smallNORB (``rem_novel_azimuth``, ``rem_novel_elevation``) train on the
familiar viewpoints and evaluate on the familiar and novel test images (see
``keras_capsules.datasets.smallnorb``).
"""

from keras_capsules.recipes.base import Recipe, register_recipe

SOURCE = "REM src/train.py, configs/*.json: Adam 1e-3, ExponentialLR 0.99 per epoch, batch 128, margin loss (0.9, 0.1, 0.5), 100-epoch configs"


#: REM's DR-CapsNet routing (src/ops/caps_utils.py ``dynamic_routing``): 3 iterations, a routing bias
#: initialised to 0.1, and the votes detached in every iteration but the last (weighted sum and agreement).
REM_ROUTER = {"name": "dynamic", "iterations": 3, "use_bias": True, "stop_gradient_inner": True}

#: REM's pruning (src/main.py): LOBSTER lambda 1e-4 decayed x0.99 per epoch, a validated global magnitude
#: threshold after every epoch, 5,500 training images held out for it.
PRUNING = {"validation_examples": 5500, "strength": 1e-4, "decay": 0.99}


def _rem(model, dataset, variant="rem", **fields):
    return register_recipe(
        Recipe(
            model=model,
            dataset=dataset,
            variant=variant,
            optimizer="adam",
            learning_rate=1e-3,
            lr_decay=0.99,
            loss="margin",
            batch_size=128,
            epochs=100,
            pruning=PRUNING,
            **fields,
        )
    )


_rem(
    "CapsNet",
    "mnist",
    configuration="CapsNet/mnist",
    model_kwargs={"router": REM_ROUTER},
    augmentation="mnist_shift2",
    source=SOURCE + "; DR-CapsNet without decoder (REM_ROUTER); RandomCrop(28, padding=2)",
)
_rem(
    "CapsNet",
    "fashion_mnist",
    configuration="CapsNet/mnist",
    model_kwargs={"router": REM_ROUTER},
    augmentation="fashion_mnist_shift2_flip",
    source=SOURCE + "; DR-CapsNet (REM_ROUTER); crop + flip",
)
_rem(
    "CapsNet",
    "cifar10",
    configuration="CapsNet/mnist",
    model_kwargs={"router": REM_ROUTER},
    augmentation="cifar24_crop_flip",
    source=SOURCE
    + "; DR-CapsNet (REM_ROUTER) on random 24x24 crops + flip, central crop for evaluation (REM's CIFAR model "
    "has 64 primary types; this one has 32)",
)
_rem(
    "CapsNet",
    "expanded_mnist",
    configuration="CapsNet/mnist",
    model_kwargs={"router": REM_ROUTER},
    eval_on=("test", "affnist|affine_mnist:test"),
    source=SOURCE + "; DR-CapsNet (REM_ROUTER) trained on translated MNIST (40x40), evaluated on affNIST",
)
_rem(
    "EffCapsNet",
    "mnist",
    configuration="EffCapsNet/mnist",
    augmentation="mnist_shift2",
    source=SOURCE + "; Eff-CapsNet",
)
_rem(
    "EffCapsNet",
    "fashion_mnist",
    configuration="EffCapsNet/mnist",
    augmentation="fashion_mnist_shift2_flip",
    source=SOURCE + "; Eff-CapsNet",
)
for _variant, _axis in (("rem", None), ("rem_novel_azimuth", "azimuth"), ("rem_novel_elevation", "elevation")):
    _rem(
        "EffCapsNet",
        "smallnorb",
        variant=_variant,
        configuration="EffCapsNet/smallnorb",
        augmentation="smallnorb_effcapsnet",
        train_split=f"{_axis}_train" if _axis else "train",
        eval_on=(f"{_axis}_familiar", f"{_axis}_novel") if _axis else ("test",),
        source=SOURCE + "; Eff-CapsNet smallNORB" + (f", novel {_axis} protocol (Hinton et al. 2018)" if _axis else ""),
    )
