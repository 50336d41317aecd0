"""Recipes of learned (kernel / LSTM) routing (the inner-consensus paper; docs/reference/models.md#consensuscapsnet)."""

from keras_capsules.recipes.base import Recipe, register_recipe

SOURCE = (
    "inner-consensus paper (Learning to compute inner consensus): Adam 3e-3 with exponential decay, 100 epochs, 3 routing iterations, Hinton's smallNORB "
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

MNIST_SOURCE = (
    "the inner-consensus paper's MNIST table (connectionist 0.53 %, similarity 1.0 %, EM 0.9 % error after 100 "
    "epochs) gives no MNIST settings: its smallNORB optimizer (Adam 3e-3, exponential decay) with batch 64, softmax "
    "cross-entropy on the class logits of the learned routers, and for the baselines, whose class outputs are "
    "activations in [0, 1], their own papers' losses (EM: spread, dynamic: margin); 12 epochs, the learning rate x0.9 a step per epoch, fixed "
    "so that the four routers train in about 40 hours of a 2-core CPU; Sabour's 2-pixel shifts"
)

_MNIST_LOSSES = {"kernel": "crossentropy", "lstm": "crossentropy", "em": "spread", "dynamic": "margin"}
for _router, _loss in _MNIST_LOSSES.items():
    register_recipe(
        Recipe(
            model="ConsensusCapsNet",
            dataset="mnist",
            variant="default" if _router == "kernel" else _router,
            model_kwargs={"router": _router},
            optimizer="adam",
            learning_rate=3e-3,
            lr_decay=0.9,
            loss=_loss,
            batch_size=64,
            epochs=12,
            augmentation="mnist_shift2",
            source=MNIST_SOURCE + f"; {_router} routing",
        )
    )
