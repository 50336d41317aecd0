"""Recipes of Efficient-CapsNet (Mazzia, Salvetti & Chiaberge 2021; docs/reference/models.md#effcapsnet-training)."""

from keras_capsules.recipes.base import Recipe, register_recipe

SOURCE = "EscVM config.json / models/model.py: Adam 5e-4, x0.97 per epoch (floor 5e-5), batch 16, 150 epochs, margin loss + 0.392 x MSE reconstruction"


def _eff(dataset, configuration, **fields):
    return register_recipe(
        Recipe(
            model="EffCapsNet",
            dataset=dataset,
            configuration=configuration,
            optimizer="adam",
            learning_rate=5e-4,
            lr_decay=0.97,
            lr_floor=5e-5,
            loss="margin",
            batch_size=16,
            epochs=150,
            **fields,
        )
    )


MNIST = "EffCapsNet/mnist-reconstruction"
_eff("mnist", MNIST, augmentation="effcapsnet_mnist", source=SOURCE + "; MNIST pipeline of pre_process_mnist.py")
_eff("mnist_sample", MNIST, augmentation="effcapsnet_mnist", source=SOURCE + "; MNIST pipeline of pre_process_mnist.py")
_eff("fashion_mnist", MNIST, source=SOURCE + " (the reference has no Fashion-MNIST pipeline: no augmentation)")
_eff(
    "smallnorb",
    "EffCapsNet/smallnorb-reconstruction",
    augmentation="smallnorb_effcapsnet",
    source=SOURCE + "; smallNORB pipeline of pre_process_smallnorb.py (48x48 stereo crops)",
)
_eff(
    "multi_mnist",
    "EffCapsNet/multimnist-reconstruction",
    dataset_options={"shift": 6},
    steps_per_epoch=10 * 60000 // 16,
    metrics=({"class_name": "Precision", "config": {"top_k": 2, "name": "top2_precision"}},),
    source=SOURCE + "; MultiMNIST: shifts of up to 6 px on 36x36 (shift_multimnist), 10 x 60000 / 16 steps per epoch; "
    "loss weights 1 / 0.196 / 0.196 for the two digit reconstructions become 0.392 on the overlay's reconstruction; "
    "pairs always have different classes here (the reference only rejects identical images)",
)
