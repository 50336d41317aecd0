"""Recipes of the CNN baselines (:func:`keras_capsules.applications.BaselineCNN`), each matched to a capsule model's.

A baseline is only a fair comparison when everything but the model is the capsule model's, so each
recipe copies one: the ``"matched"`` CNN (Efficient-CapsNet's 161,824 parameters) trains on MNIST with
the EffCapsNet mnist preset's schedule and on ``expanded_mnist`` with FMCapsNet's affNIST recipe; the
CapsNet paper's baseline (``--recipe capsnet_paper``) with the CapsNet recipe. The loss is sparse
categorical cross-entropy on the logits the models output (``classifier_activation=None``), which is
the cross-entropy of their softmax probabilities.
"""

from keras_capsules.recipes.base import Recipe, register_recipe

MATCHED_SOURCE = (
    "matched to the EffCapsNet mnist preset (its card's command: 40 epochs of Adam 5e-4 x0.93 per epoch, floor 5e-5, then "
    "5 epochs at 5e-5): the same augmentation (EscVM's MNIST pipeline, effcapsnet_mnist), batch 16, Adam 5e-4 x0.93 per "
    "epoch with the floor 5e-5 (reached at epoch 32) and the same 45-epoch budget; the preset's last 5 epochs were a "
    "restart with a fresh Adam at 5e-5 x0.9 per epoch, decided after a test score, so here they are 5 more epochs at the "
    "floor. Cross-entropy on the CNN's logits replaces the margin and reconstruction losses"
)
for _dataset in ("mnist", "mnist_sample"):
    register_recipe(
        Recipe(
            model="BaselineCNN",
            dataset=_dataset,
            configuration="BaselineCNN/matched",
            optimizer="adam",
            learning_rate=5e-4,
            lr_decay=0.93,
            lr_floor=5e-5,
            loss="crossentropy",
            batch_size=16,
            epochs=45,
            augmentation="effcapsnet_mnist",
            source=MATCHED_SOURCE,
        )
    )
register_recipe(
    Recipe(
        model="BaselineCNN",
        dataset="expanded_mnist",
        configuration="BaselineCNN/matched",
        eval_on=("test", "affnist|affine_mnist:test"),
        optimizer="adam",
        learning_rate=1e-4,
        loss="crossentropy",
        batch_size=128,
        epochs=50,
        source="the affNIST experiment of Sabour et al. 2017 (section 5.2) with FMCapsNet's expanded_mnist recipe "
        "(FMRouting ex4_3_1.py: Adam 1e-4, batch 128, no augmentation besides the random translation on the 40x40 "
        "canvas; the code gives no epoch count, 50 as FMCapsNet's recipe), cross-entropy, evaluated on the MNIST test canvas and on affNIST (needs the affNIST files); global pooling keeps "
        "the matched CNN at 161,824 parameters on 40x40",
    )
)
register_recipe(
    Recipe(
        model="BaselineCNN",
        dataset="mnist",
        variant="capsnet_paper",
        configuration="BaselineCNN/capsnet_paper",
        optimizer="adam",
        learning_rate=1e-3,
        lr_decay=0.96,
        lr_decay_steps=2000,
        loss="crossentropy",
        batch_size=128,
        epochs=50,
        augmentation="mnist_shift2",
        source="Sabour et al. 2017 section 5's baseline CNN with the CapsNet recipe (official code, Sarasra experiment.py): "
        "Adam 1e-3 decayed x0.96 every 2000 steps, batch 128, shifts of up to 2 px, 50 epochs (the paper gives none); "
        "cross-entropy on the logits, dropout 0.5 before the class layer",
    )
)
