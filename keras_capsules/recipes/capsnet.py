"""Recipes of CapsNet with dynamic routing (Sabour, Frosst & Hinton 2017; docs/reference/models.md#capsnet)."""

from keras_capsules.recipes.base import Recipe, register_recipe

SOURCE = (
    "Sabour et al. 2017 / official code (Sarasra experiment.py): Adam 1e-3 decayed x0.96 every 2000 steps, batch 128, "
    "margin loss + 0.0005 x SSE reconstruction, shifts of up to 2 px; the paper gives no epoch count (50 here)"
)
TOP2 = ({"class_name": "Precision", "config": {"top_k": 2, "name": "top2_precision"}},)


def _sabour(dataset, **fields):
    return register_recipe(
        Recipe(
            model="CapsNet",
            configuration="CapsNet/mnist-reconstruction",
            dataset=dataset,
            optimizer="adam",
            learning_rate=1e-3,
            lr_decay=0.96,
            lr_decay_steps=2000,
            loss="margin",
            batch_size=128,
            epochs=50,
            **fields,
        )
    )


for _dataset in ("mnist", "mnist_sample", "fashion_mnist"):
    _sabour(_dataset, augmentation="mnist_shift2", source=SOURCE)
_sabour(
    "multi_mnist",
    metrics=TOP2,
    source=SOURCE + "; MultiMNIST: two digits of different classes shifted up to 4 px on 36x36, multi-hot labels; "
    "the decoder reconstructs the overlay from both labelled capsules (the paper reconstructs each digit); "
    "top2_precision = share of the two longest capsules that are true digits",
)
_sabour(
    "expanded_mnist",
    eval_on=("test", "affnist|affine_mnist:test"),
    source=SOURCE
    + "; trained on 40x40 randomly translated MNIST, evaluated on affNIST (the generated affine_mnist without the affNIST files)",
)
_sabour(
    "cifar10",
    augmentation="cifar24",
    source=SOURCE + "; CIFAR-10 on 24x24 crops. The paper's CIFAR model has 64 primary capsule types and is an "
    "ensemble of 7; this is the MNIST architecture on 24x24x3",
)
