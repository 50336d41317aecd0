"""Agreement-aware, dissimilarity-oriented GLOM (Zeng et al. 2025; docs/reference/glom.md)."""

from collections.abc import Callable, Sequence
from typing import Any

import keras
import numpy as np

from keras_capsules import errors
from keras_capsules.applications import builder, io
from keras_capsules.applications.classifier import CapsuleClassifier
from keras_capsules.applications.registry import register_configuration
from keras_capsules.layers.glom import (
    ClassifierHead,
    ContrastiveHead,
    ConvTokenizer,
    DissimilarityHead,
    GlomColumns,
    PatchEmbedding,
    SelectLevel,
    WindowAveragePooling,
    WindowMaxPooling,
)
from keras_capsules.layers.glom.columns import CODE_TOP_DOWN_WEIGHT
from keras_capsules.presets import with_presets

preprocess_input = io.preprocess_input
decode_predictions = io.decode_predictions

DOWNSAMPLING: dict[str | None, Any] = {
    "dissimilarity": DissimilarityHead,
    "avg": WindowAveragePooling,
    "max": WindowMaxPooling,
    None: None,
}

#: The classifier's layers, which the two-stage helpers tell from the backbone's.
CLASSIFIER_LAYERS = ("classification_head", "predictions")


def _body(x, a):
    """Tokenizer -> patches -> GLOM columns -> top level; the top: downsampling -> H1 -> H2."""
    if None in a.input_shape:
        errors.fail(
            "AgreementGLOM", "input_shape", "a fully defined (H, W, C) (one LayerNorm scale per patch)", a.input_shape
        )
    if a.downsampling not in DOWNSAMPLING:
        errors.fail("AgreementGLOM", "downsampling", "one of 'dissimilarity', 'avg', 'max', None", a.downsampling)
    errors.check_positive_int("AgreementGLOM", "embedding_dim", a.embedding_dim, minimum=2)
    input_padding = errors.check_positive_int("AgreementGLOM", "input_padding", a.input_padding, minimum=0)
    if input_padding:
        x = keras.layers.ZeroPadding2D(input_padding, name="input_padding")(x)
    feature_map = ConvTokenizer(a.embedding_dim, name="tokenizer")(x)
    grid = (feature_map.shape[1] // a.patch_size, feature_map.shape[2] // a.patch_size)
    if a.include_top and a.downsampling is not None and (grid[0] % a.window or grid[1] % a.window):
        side = 4 * a.patch_size * a.window
        errors.fail(
            "AgreementGLOM",
            "input_padding",
            f"a padding that makes the image sides multiples of {side} (4 x patch_size x window) for the {a.window}x{a.window} windows "
            f"of downsampling={a.downsampling!r} (e.g. input_padding=2 for 28x28 images)",
            f"{input_padding} with input_shape {tuple(a.input_shape)} (a {grid[0]}x{grid[1]} grid)",
        )
    tokens = PatchEmbedding(a.patch_size, name="patch_embedding")(feature_map)
    columns = GlomColumns(
        levels=a.levels,
        iterations=a.routing_iterations,
        grid_shape=grid,
        agreement_thresholds=a.agreement_thresholds,
        agreement_radius=a.agreement_radius,
        normalize_negatives=a.normalize_negatives,
        attention_radius=a.attention_radius,
        use_agreement=a.use_agreement,
        top_down_weight=a.top_down_weight,
        trainable_top_down_weight=a.trainable_top_down_weight,
        divide_by_contributions=a.divide_by_contributions,
        column_depth=a.column_depth,
        name="columns",
    )(tokens)
    top = SelectLevel(-1, name="top_level")(columns)
    if not a.include_top:
        return builder.Network(keras.layers.Reshape(grid + (top.shape[-1],), name="top_level_features")(top))

    def head(top):
        if DOWNSAMPLING[a.downsampling] is not None:
            top = DOWNSAMPLING[a.downsampling](window=a.window, grid_shape=grid, name="downsampling")(top)
        projection = ContrastiveHead(
            a.projection_dim, hidden_dim=a.projection_hidden_dim, dropout=a.dropout, name="projection_head"
        )(top)
        hidden = a.projection_dim if a.classifier_hidden_dim is None else a.classifier_hidden_dim
        return ClassifierHead(a.classes, hidden_dim=hidden, name="classification_head")(projection)

    return builder.Network(top, head=head)


APPLICATION = builder.Application("AgreementGLOM", _body, input_shape=(32, 32, 3), min_size=lambda a: 4 * a.patch_size)


@with_presets("AgreementGLOM")
def AgreementGLOM(
    include_top: bool = True,
    weights: str | None = None,
    input_tensor: keras.KerasTensor | None = None,
    input_shape: Sequence[int] | None = None,
    pooling: str | None = None,
    classes: int = 10,
    classifier_activation: str | Callable | None = None,
    name: str = "agreement_glom",
    include_preprocessing: bool = False,
    levels: int = 2,
    routing_iterations: int | None = None,
    embedding_dim: int = 128,
    patch_size: int = 1,
    downsampling: str | None = "dissimilarity",
    window: int = 4,
    projection_dim: int = 512,
    projection_hidden_dim: int | None = None,
    dropout: float = 0.3,
    classifier_hidden_dim: int | None = None,
    agreement_thresholds: Sequence[float | Sequence[float]] | None = None,
    agreement_radius: float = 3,
    normalize_negatives: bool = True,
    attention_radius: float = 0,
    use_agreement: bool = True,
    top_down_weight: float = CODE_TOP_DOWN_WEIGHT,
    trainable_top_down_weight: bool = False,
    divide_by_contributions: bool = True,
    column_depth: int = 4,
    input_padding: int = 0,
) -> CapsuleClassifier:
    """GLOM with the contrastive agreement enhancer (CAE) and the dissimilarity-focused head ``H_d``.

    ``ConvTokenizer`` (32x32 -> 8x8x128) -> ``PatchEmbedding`` (``r = 1``: 64 columns of ``d = 128``)
    -> ``GlomColumns`` (K = 2 levels, T = 4 iterations, eq. 8 with CAE) -> top level of the last
    iteration -> ``H_d`` (4x4 windows: 4 tokens) -> ``ContrastiveHead`` H1 (L2-normalised 512-D
    projection, trained with :class:`~keras_capsules.losses.SupervisedContrastiveLoss`) ->
    ``ClassifierHead`` H2 (512 -> 512 GELU -> classes, trained on the frozen H1 projection, as in
    the code's ``classification_head_from_contr``) -> the output layer ``"predictions"``
    (``classifier_activation``; default ``None``: logits).

    The two training stages share this one model: :func:`pretraining_model` gives the stage-1
    model (images -> projection, SupCon) and :func:`freeze_backbone` freezes everything but H2 for
    stage 2 (cross-entropy); the GLOM recipes train both as the stages of one recipe. Frozen BatchNorm layers run
    in inference mode (Keras semantics); H1's dropout stays active while training H2, as in the
    code, whose frozen forward pass still runs in training mode.

    Parameters (32x32x3, 10 classes): 2,031,182 trainable (+1,408 BatchNorm statistics); with
    ``downsampling=None`` (the paper's 64-token baseline) 72,863,822. 28x28 images (MNIST,
    Fashion-MNIST) give a 7x7 grid that 4x4 windows do not divide: ``input_padding=2`` pads them to
    32x32 inside the model (what the ``fashion_mnist`` preset does).

    Args:
        include_top: the classifier (images -> class scores). Without it, the features are the
            top-level column embeddings of the last iteration: a ``(batch, H/(4r), W/(4r), d)`` map
            for ``pooling=None``, pooled over positions to ``(batch, d)`` for ``"avg"``/``"max"``
            (the stage-1 projection model is :func:`pretraining_model`).
        weights: ``None`` or the path of a local weights file.
        input_tensor: optional Keras tensor to use as the image input.
        input_shape: ``(H, W, C)``, default ``(32, 32, 3)``; fully defined (the column LayerNorms have
            one scale per patch).
        pooling: with ``include_top=False``: ``None``, ``"avg"`` or ``"max"`` (see ``include_top``).
        classes: number of classes.
        classifier_activation: ``None`` (default: H2's logits) or an activation applied by the
            output layer ``"predictions"``.
        name: model name.
        include_preprocessing: take images in [0, 255] and rescale them inside the model.
        levels: GLOM levels K (any K >= 1).
        routing_iterations: column iterations T (``None``: ``2 * levels``).
        embedding_dim: tokenizer channels ``c'``; column size ``d = patch_size**2 * embedding_dim``.
        patch_size: ``r``.
        downsampling: ``"dissimilarity"`` (``H_d``), ``"avg"``, ``"max"`` (Table 3) or ``None`` (all
            columns into H1).
        window: window side and stride of the downsampling head.
        projection_dim: H1 output size (``contr_dim``).
        projection_hidden_dim: H1 hidden width (``None``: the flattened token size, code).
        dropout: H1 dropout.
        classifier_hidden_dim: H2 hidden width (``None``: ``projection_dim``; 0: a single linear layer).
        agreement_thresholds, agreement_radius, normalize_negatives, attention_radius, use_agreement,
        top_down_weight, trainable_top_down_weight, divide_by_contributions, column_depth:
            see :class:`~keras_capsules.layers.glom.GlomColumns`.
        input_padding: zero pixels added on each side of the image inside the model, before the
            tokenizer (a ``ZeroPadding2D`` named ``"input_padding"``; no weights): ``(28, 28, C)`` with
            2 becomes ``(32, 32, C)``, the 8x8 grid the 4x4 windows divide.

    Returns:
        A built :class:`~keras_capsules.applications.CapsuleClassifier` taking images in [0, 1]
        ([0, 255] with ``include_preprocessing=True``).
    """
    return builder.build(APPLICATION, locals())


def _layer(model, name, what):
    try:
        return model.get_layer(name)
    except ValueError:
        errors.fail(what, "model", f"a model built by AgreementGLOM with a layer named {name!r}", model.name)


def pretraining_model(model):
    """The stage-1 model sharing ``model``'s weights: images -> L2-normalised H1 projection ``(batch, projection_dim)``.

    Train it with :class:`~keras_capsules.losses.SupervisedContrastiveLoss` on two augmented views
    per image.
    """
    head = _layer(model, "projection_head", "pretraining_model")
    return keras.Model(model.inputs, head.output, name=f"{model.name}_pretraining")


def freeze_backbone(model, frozen=True):
    """Stage 2: makes every layer but H2 (``classification_head``) non-trainable (or trainable again).

    Returns ``model``. Recompile after calling it (Keras rule for ``trainable`` changes).
    """
    _layer(model, "classification_head", "freeze_backbone")
    for layer in model.layers:
        if layer.name not in CLASSIFIER_LAYERS and layer.weights:
            layer.trainable = not frozen
    return model


def glom_levels(model, images, return_iterations=False, return_agreement=False, batch_size=None):
    """Runs ``model``'s tokenizer and columns on ``images`` (inference mode) and returns the GLOM levels.

    For TV_n and the island views. (A layer whose number of outputs changes between calls cannot be
    wired into a second functional model in Keras 3, so this runs the layers directly.)

    Args:
        model: a model built by :func:`AgreementGLOM`.
        images: ``(batch, H, W, C)`` in [0, 1], as the model's input (its ``input_padding`` is applied).
        return_iterations: return every iteration.
        return_agreement: also return the last iteration's CAE output (what the code's TV metric uses).
        batch_size: process in chunks of this size (``None``: all at once).

    Returns:
        levels ``(batch, N, K, d)`` (``(batch, T + 1, N, K, d)`` with ``return_iterations``), or
        ``(levels, agreement)`` with ``return_agreement``; NumPy arrays.
    """
    tokenizer = _layer(model, "tokenizer", "glom_levels")
    patches = _layer(model, "patch_embedding", "glom_levels")
    columns = _layer(model, "columns", "glom_levels")
    padding = next((layer for layer in model.layers if layer.name == "input_padding"), None)
    images = np.asarray(images)
    step = len(images) if batch_size is None else int(batch_size)
    chunks = []
    for start in range(0, len(images), max(step, 1)):
        batch = images[start : start + step]
        tokens = patches(tokenizer(batch if padding is None else padding(batch), training=False))
        out = columns(tokens, return_agreement=return_agreement, return_iterations=return_iterations)
        chunks.append([keras.ops.convert_to_numpy(o) for o in (out if return_agreement else (out,))])
    result = [np.concatenate(parts, axis=0) for parts in zip(*chunks)]
    return tuple(result) if return_agreement else result[0]


SOURCE = "docs/reference/glom.md#parameter-counts (zengru001usst/GLOM models.py, GLOM_settings.py; counted from the layer shapes)"
#: The small arguments the registry-wide contract test builds each configuration with.
TEST_SETTINGS = {"input_shape": (16, 16, 3), "classes": 3, "embedding_dim": 8, "projection_dim": 8}
register_configuration(
    "AgreementGLOM/cifar10",
    AgreementGLOM,
    {},
    trainable_params=2_031_182,
    total_params=2_032_590,
    source=SOURCE,
    test_settings=TEST_SETTINGS,
)
register_configuration(
    "AgreementGLOM/cifar10-no-hd",
    AgreementGLOM,
    {"downsampling": None},
    trainable_params=72_863_822,
    total_params=72_865_230,
    source=SOURCE + ": ablation baseline without H_d, 64 tokens into H1 (the paper's 72M)",
    roundtrip=False,
    test_settings=TEST_SETTINGS,
)
for _pooling, _head in (("avg", "average"), ("max", "max")):
    register_configuration(
        f"AgreementGLOM/cifar10-{_pooling}-pool",
        AgreementGLOM,
        {"downsampling": _pooling},
        trainable_params=2_031_182,
        total_params=2_032_590,
        source=SOURCE + f": Table 3 {_head}-pooling head (no parameters)",
        roundtrip=False,
        test_settings=TEST_SETTINGS,
    )
