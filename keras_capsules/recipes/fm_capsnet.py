"""Recipes of FM-agreement capsule networks (Zhao, Wang & Huang; docs/reference/models.md#fmcapsnet)."""

from keras_capsules.recipes.base import Recipe, register_recipe

SOURCE = (
    "FMRouting ex4_2.py, data_input.py (He et al. CIFAR schedule): SGD 0.1, momentum 0.9, x0.1 at epochs 81 and 122, "
    "163 epochs, batch 128, softmax cross-entropy on the FM activations; L2 1e-4 is in the model's kernel regularisers; "
    "per-image standardisation, pad to +8 and random crop, flips except for SVHN"
)

for _dataset, _augmentation in (("cifar10", "fm_cifar"), ("fashion_mnist", "fm_cifar"), ("svhn", "fm_svhn")):
    register_recipe(
        Recipe(
            model="FMCapsNet",
            dataset=_dataset,
            configuration="FMCapsNet/cifar10",
            optimizer="sgd",
            learning_rate=0.1,
            momentum=0.9,
            lr_schedule="step",
            lr_milestones=(81, 122),
            lr_gamma=0.1,
            loss="crossentropy",
            batch_size=128,
            epochs=163,
            augmentation=_augmentation,
            source=SOURCE,
        )
    )
register_recipe(
    Recipe(
        model="FMCapsNet",
        dataset="expanded_mnist",
        configuration="FMCapsNet/affnist-reconstruction",
        model_kwargs={"router": {"name": "fm_agreement", "activation": "squash", "scale": "code"}},
        eval_on=("test", "affnist|affine_mnist:test"),
        optimizer="adam",
        learning_rate=1e-4,
        loss="margin",
        batch_size=128,
        epochs=50,
        source="FMRouting ex4_3_1.py: Adam 1e-4, batch 128, margin loss (0.9, 0.1, 0.5) + 0.0005 x SSE deconvolution "
        "reconstruction, squashed FM class capsules; trained on MNIST on a 40x40 canvas (randomly translated here), "
        "evaluated on affNIST; no epoch count is given (50 here)",
    )
)
register_recipe(
    Recipe(
        model="FMCapsNet",
        dataset="fashion_mnist",
        variant="light",
        configuration="FMCapsNet/light",
        optimizer="adam",
        learning_rate=1e-3,
        loss="margin",
        batch_size=128,
        epochs=100,
        augmentation="fashion_mnist_shift2_flip",
        source="Zhao, Wang & Huang, section 4.1 (ex4_1_light.py): Adam 1e-3, batch 128, 50 epochs (100 with augmentation); margin loss "
        "on the squashed class-capsule lengths; random 2-px shifts and horizontal flips (the code's data_input standardises each "
        "image and shifts by up to 4 px: pad to +8, random crop). The same recipe trains the DR "
        "comparison with router={'name': 'dynamic', 'use_bias': False}, routing_iterations=3",
    )
)
