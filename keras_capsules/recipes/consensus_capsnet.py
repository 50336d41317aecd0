"""Recipes of learned (kernel / LSTM) routing (seed 001, "Learning to compute inner consensus"; docs/reference/models.md#consensuscapsnet)."""

from keras_capsules.recipes.base import Recipe, register_recipe

SOURCE = (
    "seed 001 paper: Adam 3e-3 with exponential decay, 100 epochs, 3 routing iterations, Hinton's smallNORB "
    "preprocessing (48 -> random 32x32 crops, brightness/contrast); the decay rate and batch size are not given "
    "(Hinton's x0.96 per 20000 steps and 64 here); loss: the code's default softmax cross-entropy on the class logits"
)

for _router in ("kernel", "lstm"):
    register_recipe(
        Recipe(
            model="ConsensusCapsNet",
            dataset="smallnorb",
            variant="default" if _router == "kernel" else _router,
            configuration=f"ConsensusCapsNet/smallnorb-{_router}",
            optimizer="adam",
            learning_rate=3e-3,
            lr_decay=0.96,
            lr_decay_steps=20000,
            loss="crossentropy",
            batch_size=64,
            epochs=100,
            augmentation="smallnorb_em",
            source=SOURCE + f"; {_router} routing",
        )
    )
