"""Recipes of capsules with inverted dot-product attention routing (Tsai et al. 2020; docs/reference/models.md#invertedattentioncapsnet)."""

from keras_capsules.recipes.base import Recipe, register_recipe

SOURCE = (
    "apple main_capsule.py / paper App. A: SGD 0.1, momentum 0.9, weight decay 5e-4, x0.1 at epochs 150 and 250, "
    "350 epochs, batch 128, softmax cross-entropy; pad 4 + random crop + flip (the CIFAR mean/std normalisation is "
    "the model's first layer). Keras' SGD weight decay is decoupled (PyTorch adds it to the gradient, where momentum 0.9 "
    "amplifies it about 10x), so the same 5e-4 regularises about 10x less here"
)

for _dataset in ("cifar10", "cifar100"):
    for _backbone in ("resnet", "simple"):
        register_recipe(
            Recipe(
                model="InvertedAttentionCapsNet",
                dataset=_dataset,
                variant="default" if _backbone == "resnet" else "simple",
                configuration=f"InvertedAttentionCapsNet/{_dataset}-{_backbone}",
                optimizer="sgd",
                learning_rate=0.1,
                momentum=0.9,
                weight_decay=5e-4,
                lr_schedule="step",
                lr_milestones=(150, 250),
                lr_gamma=0.1,
                loss="crossentropy",
                batch_size=128,
                epochs=350,
                augmentation="cifar_crop_flip",
                source=SOURCE + f"; {_backbone} backbone, 2 routing iterations (README runs)",
            )
        )
