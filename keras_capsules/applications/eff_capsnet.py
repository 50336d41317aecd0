"""Efficient-CapsNet (Mazzia, Salvetti & Chiaberge 2021; ALGORITHMS.md §4)."""

import keras

from keras_capsules import errors
from keras_capsules.applications import utils
from keras_capsules.applications.registry import register_configuration
from keras_capsules.layers import CapsuleDecoder, FcCaps, PrimaryCaps
from keras_capsules.serialization import register

preprocess_input = utils.preprocess_input
decode_predictions = utils.decode_predictions

#: Per-variant settings: input shape, classes, stem (filters, kernel, stride), primary kernel and stride.
VARIANTS = {
    "mnist": dict(
        input_shape=(28, 28, 1),
        classes=10,
        stem=((32, 5, 1), (64, 3, 1), (64, 3, 1), (128, 3, 2)),
        primary=(9, 1),
        norm="batch",
    ),
    "smallnorb": dict(
        input_shape=(48, 48, 2),
        classes=5,
        stem=((32, 7, 2), (64, 3, 1), (64, 3, 1), (128, 3, 2)),
        primary=(8, 1),
        norm="instance",
    ),
    "multimnist": dict(
        input_shape=(36, 36, 1),
        classes=10,
        stem=((32, 5, 1), (64, 3, 1), (64, 3, 2), (128, 3, 2)),
        primary=(5, 2),
        norm="batch",
    ),
}


@register
class UpsamplingDecoder(keras.layers.Layer):
    """Efficient-CapsNet's smallNORB decoder: Dense to an ``s x s`` map, then 3 x (bilinear x2, conv 3x3 valid, LeakyReLU), then a sigmoid conv.

    Input ``(batch, classes * capsule_dim)``; output ``(batch, H, W, C)`` with
    ``H = W = 8 * seed_size - 16`` (48 for ``seed_size=8``).

    Args:
        image_shape: ``(H, W, C)`` of the reconstruction; must equal ``8 * seed_size - 16`` square.
        seed_size: side of the first map (8).
        filters: widths of the three upsampling convolutions ((64, 128, 128)).
    """

    def __init__(self, image_shape, seed_size=8, filters=(64, 128, 128), **kwargs):
        super().__init__(**kwargs)
        self.image_shape = tuple(int(d) for d in image_shape)
        self.seed_size = int(seed_size)
        self.filters = tuple(int(f) for f in filters)
        side = 8 * self.seed_size - 16
        if self.image_shape[:2] != (side, side):
            errors.fail(self, "image_shape", f"({side}, {side}, C) for seed_size={self.seed_size}", image_shape)
        self.seed = keras.layers.Dense(self.seed_size * self.seed_size, name="seed")
        self.reshape = keras.layers.Reshape((self.seed_size, self.seed_size, 1))
        self.blocks = []
        for i, width in enumerate(self.filters):
            self.blocks += [
                keras.layers.UpSampling2D(2, interpolation="bilinear", name=f"up_{i}"),
                keras.layers.Conv2D(width, 3, name=f"conv_{i}"),
                keras.layers.LeakyReLU(negative_slope=0.3, name=f"leaky_{i}"),
            ]
        self.output_conv = keras.layers.Conv2D(self.image_shape[-1], 3, activation="sigmoid", name="output")

    def build(self, input_shape):
        shape = tuple(input_shape)
        for layer in [self.seed, self.reshape] + self.blocks + [self.output_conv]:
            layer.build(shape)
            shape = layer.compute_output_shape(shape)

    def call(self, inputs):
        x = self.reshape(self.seed(inputs))
        for layer in self.blocks:
            x = layer(x)
        return self.output_conv(x)

    def compute_output_shape(self, input_shape):
        return (input_shape[0],) + self.image_shape

    def get_config(self):
        config = super().get_config()
        config.update({"image_shape": self.image_shape, "seed_size": self.seed_size, "filters": self.filters})
        return config


def _stem(x, variant):
    settings = VARIANTS[variant]
    for i, (filters, kernel, stride) in enumerate(settings["stem"]):
        if settings["norm"] == "batch":
            x = keras.layers.Conv2D(filters, kernel, strides=stride, activation="relu", kernel_initializer="he_normal", name=f"conv{i + 1}")(x)
            x = keras.layers.BatchNormalization(name=f"bn{i + 1}")(x)
        else:
            x = keras.layers.Conv2D(filters, kernel, strides=stride, kernel_initializer="he_normal", name=f"conv{i + 1}")(x)
            x = keras.layers.LeakyReLU(negative_slope=0.3, name=f"leaky{i + 1}")(x)
            x = keras.layers.GroupNormalization(
                groups=filters, beta_initializer="random_uniform", gamma_initializer="random_uniform", name=f"instance_norm{i + 1}"
            )(x)
    return x


def EffCapsNet(
    include_top=True,
    weights=None,
    input_tensor=None,
    input_shape=None,
    pooling=None,
    classes=None,
    classifier_activation=None,
    name="eff_capsnet",
    variant="mnist",
    router=None,
    routing_iterations=None,
    reconstruction=False,
    reconstruction_weight=0.392,
    primary_capsule_dim=8,
    class_capsule_dim=16,
):
    """Efficient-CapsNet (Mazzia et al. 2021) in its MNIST, smallNORB and MultiMNIST configurations.

    Four convolutions (BatchNorm after ReLU; smallNORB: LeakyReLU then instance norm, implemented as
    ``GroupNormalization(groups=channels)`` because Keras 3 has no InstanceNormalization) ->
    depthwise-conv PrimaryCaps (16 x 8D, ``squash_efficient``) -> FcCaps (``classes`` x 16D,
    self-attention routing) -> lengths.

    Trainable parameters: 161,824 (``"mnist"``), 151,664 (``"smallnorb"``, 48x48x2 stereo input, 5
    classes), 154,656 (``"multimnist"``, 36x36x1).

    With ``reconstruction=True``: the MNIST/MultiMNIST dense decoder (160 -> 512 -> 1024 -> H*W*C,
    he_normal / glorot_normal) or the smallNORB upsampling decoder, with loss weight 0.392 on the
    mean squared error (= 0.0005 x SSE for 784 pixels). For MultiMNIST the reference reconstructs
    each digit separately from its own target image; ``fit(images, labels)`` has only the overlay,
    so here the decoder reconstructs the overlay from both labelled capsules.

    Args:
        include_top, weights, input_tensor, input_shape, pooling, classes, classifier_activation, name:
            as in Keras Applications (``classes`` defaults to the variant's: 10, 5, 10).
        variant: ``"mnist"``, ``"smallnorb"`` or ``"multimnist"``.
        router: class-layer router (default ``"self_attention"``); any registered router works.
        routing_iterations: iterations for iterative routers.
        reconstruction: add the decoder and its loss.
        reconstruction_weight: weight on the mean squared reconstruction error.
        primary_capsule_dim: pose size of the primary capsules (paper: 8); the depthwise primary
            convolution keeps 128 channels, so there are ``128 // primary_capsule_dim`` of them.
        class_capsule_dim: pose size of the class capsules (paper: 16).

    Returns:
        A built ``keras.Model`` taking images in [0, 1].
    """
    errors.check_one_of("EffCapsNet", "variant", variant, tuple(VARIANTS))
    errors.check_one_of("EffCapsNet", "primary_capsule_dim", primary_capsule_dim, (1, 2, 4, 8, 16, 32, 64, 128))
    settings = VARIANTS[variant]
    classes = settings["classes"] if classes is None else classes
    input_shape = utils.validate_application_args(
        "EffCapsNet",
        include_top=include_top,
        weights=weights,
        input_tensor=input_tensor,
        input_shape=input_shape,
        pooling=pooling,
        classes=classes,
        classifier_activation=classifier_activation,
        default_shape=settings["input_shape"],
        min_size=settings["input_shape"][0],
    )
    inputs, x = utils.model_inputs(input_tensor, input_shape)
    x = _stem(x, variant)
    kernel, stride = settings["primary"]
    children = PrimaryCaps(
        128 // primary_capsule_dim, primary_capsule_dim, kernel_size=kernel, strides=stride, depthwise=True, activation="squash_efficient", name="primary_caps"
    )(x)
    class_layer = FcCaps(
        classes,
        class_capsule_dim,
        router="self_attention" if router is None else router,
        routing_iterations=routing_iterations,
        kernel_initializer="he_normal",
        name="class_caps",
    )
    decoder = None
    if reconstruction and include_top:
        if variant == "smallnorb":
            decoder = UpsamplingDecoder(input_shape, name="decoder")
        else:
            decoder = CapsuleDecoder(input_shape, hidden_initializer="he_normal", output_initializer="glorot_normal", name="decoder")
    return utils.assemble(
        inputs=inputs,
        children=children,
        class_layer=class_layer,
        include_top=include_top,
        pooling=pooling,
        classifier_activation=classifier_activation,
        name=name,
        weights=weights,
        decoder=decoder,
        reconstruction_weight=reconstruction_weight,
        pixel_reduction="mean",
        mask_top_k=2 if variant == "multimnist" else 1,
    )


SOURCE = "ALGORITHMS.md §4.2-4.3 (Efficient-CapsNet, EscVM code)"
register_configuration("EffCapsNet/mnist", EffCapsNet, {"variant": "mnist"}, trainable_params=161_824, total_params=162_400, source=SOURCE)
register_configuration(
    "EffCapsNet/mnist-reconstruction",
    EffCapsNet,
    {"variant": "mnist", "reconstruction": True},
    trainable_params=161_824 + 1_411_344,
    total_params=162_400 + 1_411_344,
    source=SOURCE + " + decoder 1,411,344",
)
register_configuration("EffCapsNet/smallnorb", EffCapsNet, {"variant": "smallnorb"}, trainable_params=151_664, source=SOURCE)
register_configuration("EffCapsNet/multimnist", EffCapsNet, {"variant": "multimnist"}, trainable_params=154_656, source=SOURCE)
