"""Two-stage recipes of the agreement-aware GLOM (Zeng et al.; docs/reference/glom.md#heads-and-training).

Stage ``pretrain``: SupCon (temperature 0.07) on two augmented views per image, training the backbone
and H1 (the model's ``projection_head`` output). Stage ``classifier``: H2 (``classification_head``)
with cross-entropy on the frozen backbone and H1, one augmented view per image. Both stages use the
code's AdamW (lr 0.012, weight decay 5e-4) with a fresh one-cycle schedule, batch 800 and 200 epochs
each (``--epochs`` sets both, ``--stage-epochs pretrain=N classifier=M`` each). The views use the
``glom_*`` augmentation presets, a reproducible substitute of the code's RandAugment (weaker: expect
lower accuracy than the paper's); the MNIST-like presets zero-pad 28x28 images to 32x32 so that H_d's
4x4 windows divide the 8x8 grid.
"""

from keras_capsules.recipes.base import Recipe, Stage, register_recipe

SOURCE = (
    "zengru001usst/GLOM GLOM_settings.py, models.py configure_optimizers: AdamW 0.012, weight decay 5e-4, OneCycleLR, "
    "batch 800, 200 epochs; SupCon (tau 0.07) on two views, then H2 with cross-entropy on the frozen backbone. "
    "An epoch here is one pass over the whole training split (CIFAR: 50,000 images, 63 steps), where the code holds "
    "5,000 out for validation (45,000 // 800 = 56 steps)"
)
STAGES = (
    Stage(
        "pretrain",
        output="projection_head",
        views=2,
        loss="SupervisedContrastiveLoss",
        loss_kwargs={"temperature": 0.07},
        metrics=(),
    ),
    Stage("classifier", trainable=("classification_head",)),
)
DATASETS = {
    "cifar10": ("glom_cifar", ""),
    "cifar100": ("glom_cifar", "; the code adds RandomErasing for CIFAR-100, left out here"),
    "fashion_mnist": ("glom_fashion_mnist", "; 28x28 zero-padded to 32x32, 1 channel"),
    "mnist": ("glom_mnist", "; 28x28 zero-padded to 32x32, no flips, 1 channel (the code repeats MNIST to 3)"),
    "mnist_sample": ("glom_mnist", "; the embedded MNIST sample, as mnist"),
}

for _dataset, (_augmentation, _note) in DATASETS.items():
    register_recipe(
        Recipe(
            model="AgreementGLOM",
            dataset=_dataset,
            model_kwargs={"classifier_activation": "softmax"},
            optimizer="adamw",
            learning_rate=0.012,
            weight_decay=5e-4,
            lr_schedule="onecycle",
            loss="crossentropy",
            loss_kwargs={"from_logits": False},
            batch_size=800,
            epochs=200,
            augmentation=_augmentation,
            stages=STAGES,
            source=SOURCE + _note,
        )
    )
