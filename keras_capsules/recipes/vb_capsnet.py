"""Recipe of capsules with variational-Bayes routing (Ribeiro, Leontidis & Kollias 2020; docs/applications/vb_capsnet.md)."""

from keras_capsules.recipes.base import Recipe, register_recipe

SOURCE = (
    "the authors' code (github.com/fabio-deep/Variational-Capsule-Routing, src/main.py and train.py defaults): Adam "
    "1e-3 without decay or weight decay, batch 128, 300 epochs, cross-entropy on the class activations taken as "
    "logits, smallNORB 48x48 -> random 32x32 crops (centre crop for testing); the code feeds both cameras and no "
    "brightness/contrast jitter (its defaults are 0), the nearest registered pipeline, smallnorb_em, takes the first "
    "camera and jitters"
)

register_recipe(
    Recipe(
        model="VBCapsNet",
        dataset="smallnorb",
        configuration="VBCapsNet/smallnorb",
        optimizer="adam",
        learning_rate=1e-3,
        loss="crossentropy",
        batch_size=128,
        epochs=300,
        augmentation="smallnorb_em",
        source=SOURCE,
    )
)
