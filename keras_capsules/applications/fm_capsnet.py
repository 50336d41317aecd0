"""FMCapsNet: capsule networks with FM agreement (Zhao, Wang & Huang, seed 003; ALGORITHMS.md §6.3-6.4)."""

import keras
from keras import ops

from keras_capsules import errors, routing
from keras_capsules.applications import utils
from keras_capsules.applications.registry import register_configuration
from keras_capsules.layers import FcCaps, Length, Squash
from keras_capsules.serialization import register

preprocess_input = utils.preprocess_input
decode_predictions = utils.decode_predictions

WEIGHT_DECAY = 1e-4

#: Per-variant settings: input shape, residual blocks per stage, hidden capsule layers, decoder.
VARIANTS = {
    # ex4_2 (CIFAR-10, SVHN, F-MNIST; paper Table 2): ResNet-v2 [8, 8, 8] + capsules 32/16/classes.
    "cifar": dict(input_shape=(32, 32, 3), blocks=(8, 8, 8), hidden_capsules=(32, 16)),
    # ex4_3_1 (trained on MNIST padded to 40x40, tested on affNIST): [1, 1, 1] + one class layer.
    "affnist": dict(input_shape=(40, 40, 1), blocks=(1, 1, 1), hidden_capsules=()),
}


@register
class DeconvDecoder(keras.layers.Layer):
    """FMRouting's deconvolution decoder (``DecoderConv``, ex4_3_1) for the affNIST model.

    The masked class capsules are summed over the classes (the code's ``Mask(share=True)``): with one
    capsule kept by the mask this is that capsule's pose, so the decoder sees a ``capsule_dim``
    vector. Then ``Dense(base*base*filters)`` -> BatchNorm -> LeakyReLU -> reshape
    ``(base, base, filters)`` -> ConvT(filters/2, 5x5, s1) -> BN -> LeakyReLU -> ConvT(filters/4,
    5x5, s2) -> BN -> LeakyReLU -> ConvT(channels, 5x5, s2, sigmoid); the transposed convolutions are
    he_normal with L2 1e-4, the Dense layer glorot_uniform without regularisation (as in the code).

    Input ``(batch, classes * capsule_dim)`` (the output of :class:`~keras_capsules.layers.Mask`);
    output ``(batch, 4*base, 4*base, channels)`` in [0, 1]. The defaults give 186,145 trainable
    parameters and 12,896 BatchNorm statistics (199,041 in all) for 10 x 16D capsules and 40x40x1.

    Args:
        image_shape: ``(H, W, C)`` of the reconstruction; must be ``(4*base, 4*base, C)``.
        capsule_dim: pose size of one class capsule (16).
        base: side of the first feature map (10).
        filters: channels of the first feature map (64).
    """

    def __init__(self, image_shape, capsule_dim=16, base=10, filters=64, **kwargs):
        super().__init__(**kwargs)
        self.image_shape = tuple(int(d) for d in image_shape)
        self.capsule_dim = errors.check_positive_int(self, "capsule_dim", capsule_dim)
        self.base = errors.check_positive_int(self, "base", base)
        self.filters = errors.check_positive_int(self, "filters", filters, minimum=4)
        side = 4 * self.base
        if len(self.image_shape) != 3 or self.image_shape[:2] != (side, side):
            errors.fail(self, "image_shape", f"({side}, {side}, C) for base={self.base}", image_shape)
        conv = dict(kernel_size=5, padding="same", kernel_initializer="he_normal", kernel_regularizer=keras.regularizers.L2(WEIGHT_DECAY))
        self.stack = [
            keras.layers.Dense(self.base * self.base * self.filters, name="dense"),
            keras.layers.BatchNormalization(name="dense_bn"),
            keras.layers.LeakyReLU(name="dense_leaky"),
            keras.layers.Reshape((self.base, self.base, self.filters), name="reshape"),
            keras.layers.Conv2DTranspose(self.filters // 2, strides=1, name="deconv1", **conv),
            keras.layers.BatchNormalization(name="deconv1_bn"),
            keras.layers.LeakyReLU(name="deconv1_leaky"),
            keras.layers.Conv2DTranspose(self.filters // 4, strides=2, name="deconv2", **conv),
            keras.layers.BatchNormalization(name="deconv2_bn"),
            keras.layers.LeakyReLU(name="deconv2_leaky"),
            keras.layers.Conv2DTranspose(self.image_shape[-1], strides=2, activation="sigmoid", name="deconv3", **conv),
        ]

    def build(self, input_shape):
        errors.check_rank(self, "inputs", input_shape, 2, "(batch, classes * capsule_dim)")
        if input_shape[-1] is not None and input_shape[-1] % self.capsule_dim:
            errors.fail(self, "inputs", f"a last axis that is a multiple of capsule_dim={self.capsule_dim}", f"shape {tuple(input_shape)}")
        shape = (input_shape[0], self.capsule_dim)
        for layer in self.stack:
            layer.build(shape)
            shape = layer.compute_output_shape(shape)

    def call(self, inputs, training=None):
        classes = inputs.shape[-1] // self.capsule_dim
        x = ops.sum(ops.reshape(inputs, (ops.shape(inputs)[0], classes, self.capsule_dim)), axis=1)
        for layer in self.stack:
            x = layer(x, training=training) if isinstance(layer, keras.layers.BatchNormalization) else layer(x)
        return x

    def compute_output_shape(self, input_shape):
        return (input_shape[0],) + self.image_shape

    def get_config(self):
        config = super().get_config()
        config.update({"image_shape": self.image_shape, "capsule_dim": self.capsule_dim, "base": self.base, "filters": self.filters})
        return config


def _resnet_v2(x, blocks, start_filters=16):
    """FMRouting's CIFAR ResNet-v2 backbone (``res_blocks.build_resnet_backbone``, ``version='v2'``).

    Stem conv 3x3 -> BN -> ReLU; stages of pre-activation basic blocks (BN-ReLU-conv x 2; the very
    first block skips its first BN-ReLU, which the stem already applied), filters doubling and stride
    2 from the second stage, 1x1 conv shortcut (no BN) when the shape changes; final BN -> ReLU.
    Convolutions: no bias, he_normal, L2 1e-4; BN: momentum 0.99, epsilon 1e-3 (ex4_2's values).
    """
    conv = dict(use_bias=False, kernel_initializer="he_normal", kernel_regularizer=keras.regularizers.L2(WEIGHT_DECAY))
    x = keras.layers.Conv2D(start_filters, 3, padding="same", name="conv1", **conv)(x)
    x = keras.layers.BatchNormalization(name="conv1_bn")(x)
    x = keras.layers.ReLU(name="conv1_relu")(x)
    filters = start_filters
    for stage, repetitions in enumerate(blocks):
        for block in range(repetitions):
            prefix = f"stage{stage + 2}_block{block + 1}"
            strides = 2 if block == 0 and stage > 0 else 1
            shortcut = x
            y = x
            if not (stage == 0 and block == 0):
                y = keras.layers.BatchNormalization(name=f"{prefix}_bn1")(y)
                y = keras.layers.ReLU(name=f"{prefix}_relu1")(y)
            y = keras.layers.Conv2D(filters, 3, strides=strides, padding="same", name=f"{prefix}_conv1", **conv)(y)
            y = keras.layers.BatchNormalization(name=f"{prefix}_bn2")(y)
            y = keras.layers.ReLU(name=f"{prefix}_relu2")(y)
            y = keras.layers.Conv2D(filters, 3, padding="same", name=f"{prefix}_conv2", **conv)(y)
            if strides > 1 or shortcut.shape[-1] != filters:
                shortcut = keras.layers.Conv2D(filters, 1, strides=strides, name=f"{prefix}_shortcut", **conv)(shortcut)
            x = keras.layers.Add(name=f"{prefix}_add")([shortcut, y])
        filters *= 2
    x = keras.layers.BatchNormalization(name="final_bn")(x)
    return keras.layers.ReLU(name="final_relu")(x)


def _routers(owner, router, layers):
    """One router config per capsule layer: the paper's FM for ``None``/``"fm_agreement"``."""
    if router is None or router == "fm_agreement":
        return [{"name": "fm_agreement", "normalize_pose": i == layers - 1} for i in range(layers)]
    if isinstance(router, str):
        return [router] * layers
    if isinstance(router, dict):
        return [dict(router) for _ in range(layers)]
    if isinstance(router, routing.Router) and layers == 1:
        return [router]
    errors.fail(
        owner,
        "router",
        "a router name or config dict (applied to every capsule layer; a Router instance only when "
        "there is a single capsule layer)",
        router,
        TypeError,
    )


def FMCapsNet(
    include_top=True,
    weights=None,
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=10,
    classifier_activation="softmax",
    name="fm_capsnet",
    variant="cifar",
    router=None,
    routing_iterations=None,
    reconstruction=False,
    reconstruction_weight=0.0005,
):
    """The FM-agreement capsule networks of seed 003 (Zhao, Wang & Huang).

    ResNet-v2 backbone (16 start filters) -> PrimaryCaps (conv 5x5 s2 "same", 4 groups x 16 atoms,
    no bias, he_normal, L2 1e-4; reshaped to capsules; BatchNorm over the 16 atoms; squash) ->
    capsule layers (4x4 matrix transform ``u_i W_ij``, glorot_normal, L2 1e-4, then the FM router:
    vote BatchNorm, L2-normalised votes, FM agreement) -> class activations ``a_j = sum_f s_j,f``
    used as logits (softmax cross-entropy in the paper; ``classifier_activation="softmax"`` turns them
    into probabilities, ``None`` keeps the logits). Hidden capsule layers pass the unnormalised
    ``s_j`` on; the class layer normalises its poses (FMRouting's ``norm_pose``).

    Variants:

    - ``"cifar"`` (paper Table 2; ex4_2): 32x32x3, ResNet-v2 [8, 8, 8] (24 blocks; the paper says
      25), capsules 64 -> 32 -> 16 -> ``classes``. **903,760** trainable parameters (backbone
      757,712), 3,744 BatchNorm statistics.
    - ``"affnist"`` (ex4_3_1): 40x40x1, [1, 1, 1], 100 primary capsules -> ``classes``.
      **195,376** trainable; with ``reconstruction=True`` the model is a
      :class:`~keras_capsules.applications.classifier.CapsuleClassifier` with FMRouting's
      deconvolution decoder (:class:`DeconvDecoder`, 186,145 trainable, **199,041** with its BatchNorm
      statistics) and loss weight 0.0005 on the summed squared error (``params.recons.balance_factor``),
      the decoder reading the labelled capsule's pose.

    ``router`` replaces FM in every capsule layer (e.g. ``"dynamic"`` or ``"em"`` for the paper's
    comparisons). Note that the vote BatchNorm belongs to the FM router here, so other routers run
    without it (FMRouting applies it before every router: 32 parameters per layer fewer).

    Reconstruction note: FM class poses are unit vectors, so ``model.reconstruct(images)`` without
    labels cannot pick the capsule by its length; pass ``labels`` (e.g. the predicted classes).
    The affNIST code (ex4_3_1) uses ``LastFMPool(activation='squash')`` (squashed poses, squash-length
    activations): ``router={"name": "fm_agreement", "activation": "squash"}``.

    Args:
        include_top: with the class layer and scores; otherwise the capsules that feed the class
            layer, flattened to ``(batch, capsules * 16)`` (16 x 16 for ``"cifar"``, the 100 primary
            capsules for ``"affnist"``).
        weights: ``None`` or the path of a local weights file.
        input_tensor: optional Keras tensor to use as the image input.
        input_shape: ``(H, W, C)``; default ``(32, 32, 3)`` (``"cifar"``) or ``(40, 40, 1)``
            (``"affnist"``); H and W at least 8.
        pooling: accepted for Keras Applications compatibility (``None``, ``"avg"``, ``"max"``); the
            ``include_top=False`` output is a flat capsule vector, so it has no effect.
        classes: number of class capsules.
        classifier_activation: activation on the class activations (``"softmax"``; ``None`` keeps logits).
        name: model name.
        variant: ``"cifar"`` or ``"affnist"``.
        router: ``None`` (the paper's FM), a router name or config dict for every capsule layer.
        routing_iterations: iterations for iterative replacement routers (FM makes one pass).
        reconstruction: add the deconvolution decoder (``"affnist"`` only).
        reconstruction_weight: weight of the summed squared reconstruction error.

    Returns:
        A built ``keras.Model`` taking images in [0, 1] (the paper standardises each image).
    """
    errors.check_one_of("FMCapsNet", "variant", variant, tuple(VARIANTS))
    settings = VARIANTS[variant]
    if reconstruction and variant != "affnist":
        errors.fail("FMCapsNet", "reconstruction", "False for variant='cifar' (the decoder is the affNIST model's)", reconstruction)
    input_shape = utils.validate_application_args(
        "FMCapsNet",
        include_top=include_top,
        weights=weights,
        input_tensor=input_tensor,
        input_shape=input_shape,
        pooling=pooling,
        classes=classes,
        classifier_activation=classifier_activation,
        default_shape=settings["input_shape"],
        min_size=8,
    )
    routers = _routers("FMCapsNet", router, len(settings["hidden_capsules"]) + 1)
    inputs, x = utils.model_inputs(input_tensor, input_shape)
    x = _resnet_v2(x, settings["blocks"])
    x = keras.layers.Conv2D(
        64,
        5,
        strides=2,
        padding="same",
        use_bias=False,
        kernel_initializer="he_normal",
        kernel_regularizer=keras.regularizers.L2(WEIGHT_DECAY),
        name="primary_conv",
    )(x)
    grid = x.shape[1] * x.shape[2] * 4
    x = keras.layers.Reshape((grid, 16), name="primary_capsules")(x)
    x = keras.layers.BatchNormalization(name="primary_bn")(x)
    primary = Squash(name="primary_squash")(x)
    # Activations of the primary capsules: their squashed lengths (FMRouting's ``with_prob``); FM
    # ignores them, EM (``router="em"``) uses them.
    children = (primary, Length(name="primary_lengths")(primary))

    def capsules(num, config, layer_name):
        return FcCaps(
            num,
            router=config,
            routing_iterations=routing_iterations,
            transform="matrix",
            matrix_side="right",
            kernel_initializer="glorot_normal",
            kernel_regularizer=keras.regularizers.L2(WEIGHT_DECAY),
            name=layer_name,
        )

    for i, num in enumerate(settings["hidden_capsules"]):
        children = capsules(num, routers[i], f"caps{i + 1}")(children)
    class_layer = capsules(classes, routers[-1], "class_caps")

    decoder = None
    if reconstruction and include_top:
        decoder = DeconvDecoder(input_shape, capsule_dim=16, name="decoder")
    return utils.assemble(
        inputs=inputs,
        children=children,
        class_layer=class_layer,
        include_top=include_top,
        pooling=pooling,
        classifier_activation=classifier_activation,
        name=name,
        weights=weights,
        score_head=lambda class_poses, class_acts: class_acts,
        decoder=decoder,
        reconstruction_weight=reconstruction_weight,
        pixel_reduction="sum",
    )


SOURCE = "ALGORITHMS.md §6.3-6.4 (seed 003, FMRouting code)"
register_configuration(
    "FMCapsNet/cifar10", FMCapsNet, {"variant": "cifar"}, trainable_params=903_760, total_params=903_760 + 3_744, source=SOURCE
)
register_configuration(
    "FMCapsNet/affnist", FMCapsNet, {"variant": "affnist"}, trainable_params=195_376, total_params=195_376 + 544, source=SOURCE
)
register_configuration(
    "FMCapsNet/affnist-reconstruction",
    FMCapsNet,
    {"variant": "affnist", "reconstruction": True},
    trainable_params=195_376 + 186_145,
    total_params=195_376 + 544 + 199_041,
    source=SOURCE + " + deconvolution decoder 186,145 trainable / 199,041 with BatchNorm statistics",
)
