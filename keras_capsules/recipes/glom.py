"""Two-stage recipe of the agreement-aware GLOM (Zeng et al.; ALGORITHMS.md §9.7). TensorFlow-specific (``tf.data``).

Stage 1: SupCon pre-training of the backbone and H1 on two augmented views per image.
Stage 2: H2 trained with cross-entropy on the frozen backbone + H1 projection.

Code settings: AdamW (lr 0.012, weight decay 5e-4) with a one-cycle schedule, batch 800, 200 epochs
per stage, temperature 0.07, RandAugment views. **Augmentation substitute**: Keras has no RandAugment
layer with the torchvision policy, so the views here are a random crop (zero-pad by ``crop_padding``
then crop back), an optional horizontal flip (off for digits) and a random translation, all Keras
preprocessing layers. This is weaker than RandAugment; expect lower accuracy than the paper's.

Usage::

    model = AgreementGLOM(input_shape=(32, 32, 3), classes=10)
    histories = train_agreement_glom(model, train_ds, recipe=get_glom_recipe("cifar10"))
"""

import dataclasses
import math

import keras

from keras_capsules.serialization import register


@dataclasses.dataclass(frozen=True)
class GlomRecipe:
    """Hyper-parameters of the two GLOM stages.

    Attributes:
        dataset: dataset name.
        model_kwargs: ``AgreementGLOM`` arguments (input shape, classes, ...).
        learning_rate: peak learning rate of the one-cycle schedule (both stages).
        weight_decay: AdamW decoupled weight decay.
        batch_size: images per batch (each gives two views in stage 1).
        pretrain_epochs, classifier_epochs: epochs of the two stages.
        temperature: SupCon temperature.
        crop_padding: pixels of zero padding before the random crop (0: no crop).
        flip: random horizontal flips.
        translation: random translation as a fraction of height and width (0: none).
        pad_to: zero-pad images to this ``(H, W)`` first (28x28 -> 32x32 for MNIST-like data).
        source: where the values come from.
    """

    dataset: str
    model_kwargs: dict = dataclasses.field(default_factory=dict)
    learning_rate: float = 0.012
    weight_decay: float = 5e-4
    batch_size: int = 800
    pretrain_epochs: int = 200
    classifier_epochs: int = 200
    temperature: float = 0.07
    crop_padding: int = 4
    flip: bool = True
    translation: float = 0.1
    pad_to: tuple = None
    source: str = ""

    def replace(self, **changes):
        """A copy with ``changes`` applied (``None`` values are ignored)."""
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})


CODE_SOURCE = "zengru001usst/GLOM GLOM_settings.py, models.py configure_optimizers (AdamW 0.012, wd 5e-4, OneCycleLR, batch 800, 200 epochs)"
RECIPES = {
    "cifar10": GlomRecipe("cifar10", {"input_shape": (32, 32, 3), "classes": 10}, source=CODE_SOURCE),
    "cifar100": GlomRecipe("cifar100", {"input_shape": (32, 32, 3), "classes": 100}, source=CODE_SOURCE),
    "fashion_mnist": GlomRecipe(
        "fashion_mnist", {"input_shape": (32, 32, 1), "classes": 10}, pad_to=(32, 32), crop_padding=2, translation=0.05,
        source=CODE_SOURCE + "; 28x28 zero-padded to 32x32 so the 8x8 grid splits into 4x4 windows (not in the repo); 1 channel",
    ),
    "mnist": GlomRecipe(
        "mnist", {"input_shape": (32, 32, 1), "classes": 10}, pad_to=(32, 32), crop_padding=2, flip=False, translation=0.05,
        source=CODE_SOURCE + "; 28x28 zero-padded to 32x32; no flips for digits; 1 channel (the code repeats MNIST to 3)",
    ),
}


def get_glom_recipe(dataset):
    """The :class:`GlomRecipe` for ``dataset`` (``"cifar10"``, ``"cifar100"``, ``"fashion_mnist"``, ``"mnist"``)."""
    if dataset not in RECIPES:
        raise ValueError(f"get_glom_recipe: argument `dataset` expected one of {sorted(RECIPES)}, received {dataset!r}.")
    return RECIPES[dataset]


@register
class OneCycleSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """PyTorch's ``OneCycleLR`` (cosine annealing): ``max/div`` -> ``max`` over ``pct_start`` of the steps -> ``max/(div*final_div)``.

    Args:
        max_learning_rate: the peak. total_steps: steps of the whole run.
        pct_start: warm-up fraction (0.3). div_factor: initial ``max/lr`` (25). final_div_factor: (1e4).
    """

    def __init__(self, max_learning_rate, total_steps, pct_start=0.3, div_factor=25.0, final_div_factor=1e4):
        self.max_learning_rate = float(max_learning_rate)
        self.total_steps = int(total_steps)
        self.pct_start = float(pct_start)
        self.div_factor = float(div_factor)
        self.final_div_factor = float(final_div_factor)

    def __call__(self, step):
        ops = keras.ops
        step = ops.cast(step, "float32")
        initial = self.max_learning_rate / self.div_factor
        final = initial / self.final_div_factor
        up_steps = max(self.pct_start * self.total_steps - 1.0, 1.0)
        down_steps = max(self.total_steps - 1.0 - up_steps, 1.0)

        def cosine(start, end, fraction):
            fraction = ops.clip(fraction, 0.0, 1.0)
            return end + (start - end) * 0.5 * (1.0 + ops.cos(math.pi * fraction))

        warm = cosine(initial, self.max_learning_rate, step / up_steps)
        cool = cosine(self.max_learning_rate, final, (step - up_steps) / down_steps)
        return ops.where(step <= up_steps, warm, cool)

    def get_config(self):
        return {
            "max_learning_rate": self.max_learning_rate,
            "total_steps": self.total_steps,
            "pct_start": self.pct_start,
            "div_factor": self.div_factor,
            "final_div_factor": self.final_div_factor,
        }


def make_augmentation(image_shape, crop_padding=4, flip=True, translation=0.1, seed=None):
    """The RandAugment substitute: ``keras.Sequential`` of pad + random crop, horizontal flip, translation.

    Args:
        image_shape: ``(H, W, C)`` of the images.
        crop_padding: zero padding before cropping back to ``H x W`` (0: no crop).
        flip: random horizontal flip.
        translation: random translation factor (0: none), zero fill.
        seed: seed of the random layers.
    """
    height, width = int(image_shape[0]), int(image_shape[1])
    stack = []
    if crop_padding:
        stack += [keras.layers.ZeroPadding2D(crop_padding), keras.layers.RandomCrop(height, width, seed=seed)]
    if flip:
        stack.append(keras.layers.RandomFlip("horizontal", seed=seed))
    if translation:
        stack.append(keras.layers.RandomTranslation(translation, translation, fill_mode="constant", seed=seed))
    return keras.Sequential(stack or [keras.layers.Identity()], name="augmentation")


def pad_images(images, size):
    """Zero-pads ``(batch, H, W, C)`` images (centred) to ``size = (H', W')`` (28x28 -> 32x32)."""
    import tensorflow as tf

    height, width = images.shape[1], images.shape[2]
    top, left = (size[0] - height) // 2, (size[1] - width) // 2
    return tf.image.pad_to_bounding_box(images, top, left, size[0], size[1])


def _dataset(data, batch_size, pad_to, seed, shuffle=True):
    import tensorflow as tf

    if isinstance(data, tf.data.Dataset):
        dataset = data
    else:
        images, labels = data
        dataset = tf.data.Dataset.from_tensor_slices((images, labels))
        if shuffle:
            dataset = dataset.shuffle(len(images), seed=seed)
        dataset = dataset.batch(batch_size)
    dataset = dataset.map(lambda x, y: (tf.cast(x, tf.float32), y))
    if pad_to is not None:
        dataset = dataset.map(lambda x, y: (pad_images(x, pad_to), y))
    return dataset


def two_view_dataset(dataset, augmentation):
    """``(images, labels)`` batches -> ``(concat(view1, view2), concat(labels, labels))`` for SupCon."""
    import tensorflow as tf

    def views(x, y):
        return tf.concat([augmentation(x, training=True), augmentation(x, training=True)], 0), tf.concat([y, y], 0)

    # Sequential map: the random layers share one seed state, so a parallel map would make runs irreproducible.
    return dataset.map(views).prefetch(tf.data.AUTOTUNE)


def _from_logits(model):
    try:
        layer = model.get_layer("predictions")
    except ValueError:
        return True
    name = keras.activations.serialize(layer.activation)
    name = name if isinstance(name, str) else name.get("config", {}).get("name", name)
    if name != "softmax":
        raise ValueError(
            f"train_agreement_glom: argument `model` expected classifier_activation None or 'softmax', received {name!r}."
        )
    return False


def train_agreement_glom(
    model,
    train_data,
    recipe=None,
    pretrain_epochs=None,
    classifier_epochs=None,
    steps_per_epoch=None,
    validation_data=None,
    augmentation=None,
    classifier_augmentation=True,
    seed=0,
    callbacks=None,
    verbose="auto",
):
    """Runs stage 1 (SupCon pre-training) and stage 2 (frozen backbone, H2 with cross-entropy) on ``model``.

    Args:
        model: a classifier built by ``AgreementGLOM(include_top=True)``; trained in place.
        train_data: a ``tf.data.Dataset`` of batched ``(images, labels)`` in [0, 1], or a pair of
            arrays (batched with ``recipe.batch_size``). Repeat it yourself when you pass
            ``steps_per_epoch`` larger than one pass.
        recipe: a :class:`GlomRecipe` (default: CIFAR-10's).
        pretrain_epochs, classifier_epochs: override the recipe (0 skips a stage).
        steps_per_epoch: steps per epoch (``None``: one pass over ``train_data``; needed for the
            schedule when the dataset's length is unknown).
        validation_data: optional ``(images, labels)`` data for stage 2's ``fit``.
        augmentation: a Keras layer for the views (default: :func:`make_augmentation` from the recipe).
        classifier_augmentation: augment (one view) in stage 2 too, as the code does.
        seed: seed for shuffling and augmentation.
        callbacks: extra Keras callbacks for both stages.
        verbose: Keras ``fit`` verbosity.

    Returns:
        ``{"pretrain": History or None, "classifier": History or None}``.
    """
    import tensorflow as tf

    from keras_capsules.applications.agreement_glom import freeze_backbone, pretraining_model
    from keras_capsules.losses import SupervisedContrastiveLoss

    recipe = recipe or get_glom_recipe("cifar10")
    pretrain_epochs = recipe.pretrain_epochs if pretrain_epochs is None else pretrain_epochs
    classifier_epochs = recipe.classifier_epochs if classifier_epochs is None else classifier_epochs
    dataset = _dataset(train_data, recipe.batch_size, recipe.pad_to, seed)
    if augmentation is None:
        augmentation = make_augmentation(
            tuple(model.inputs[0].shape[1:]), recipe.crop_padding, recipe.flip, recipe.translation, seed=seed
        )
    if steps_per_epoch is None:
        steps = int(dataset.cardinality())
        if steps < 0:
            raise ValueError("train_agreement_glom: argument `steps_per_epoch` expected a number for a dataset of unknown length.")
    else:
        steps = int(steps_per_epoch)

    def optimizer(epochs):
        schedule = OneCycleSchedule(recipe.learning_rate, max(epochs * steps, 1))
        return keras.optimizers.AdamW(schedule, weight_decay=recipe.weight_decay)

    histories = {"pretrain": None, "classifier": None}
    if pretrain_epochs:
        freeze_backbone(model, frozen=False)
        pretrainer = pretraining_model(model)
        pretrainer.compile(optimizer=optimizer(pretrain_epochs), loss=SupervisedContrastiveLoss(recipe.temperature))
        # Keras builds the optimizer inside the first traced step otherwise, and TensorFlow then traces it twice.
        pretrainer.optimizer.build(pretrainer.trainable_variables)
        histories["pretrain"] = pretrainer.fit(
            two_view_dataset(dataset, augmentation),
            epochs=pretrain_epochs,
            steps_per_epoch=steps_per_epoch,
            callbacks=callbacks,
            verbose=verbose,
            shuffle=False,
        )
    if classifier_epochs:
        freeze_backbone(model)
        model.compile(
            optimizer=optimizer(classifier_epochs),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=_from_logits(model)),
            metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],  # an object: no variables created while tracing
        )
        model.optimizer.build(model.trainable_variables)
        stage2 = dataset
        if classifier_augmentation:
            stage2 = dataset.map(lambda x, y: (augmentation(x, training=True), y))
        if validation_data is not None:
            validation_data = _dataset(validation_data, recipe.batch_size, recipe.pad_to, seed, shuffle=False)
        histories["classifier"] = model.fit(
            stage2.prefetch(tf.data.AUTOTUNE),
            epochs=classifier_epochs,
            steps_per_epoch=steps_per_epoch,
            validation_data=validation_data,
            callbacks=callbacks,
            verbose=verbose,
            shuffle=False,
        )
    return histories
