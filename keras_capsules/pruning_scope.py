"""The pruning scope (REM, docs/reference/rem.md#pruning): which layers are pruned and which of their weights are zeroed.

The *pruning layers* are convolutions (``Conv*``, ``DepthwiseConv*``, ``SeparableConv*``) and capsule
vote transforms (``VectorVotes``, ``MatrixVotes``, i.e. the ``W_ij`` of ``FcCaps``/``ConvCaps``);
Dense layers (decoders) and normalisation layers are left alone, as in REM. Their kernels are the
*prunable weights*. Shared by :mod:`keras_capsules.training.pruning` (which prunes them) and
:func:`keras_capsules.metrics.sparsity` (which counts their zeros); it imports neither.
"""

import keras

from keras_capsules import errors
from keras_capsules.introspection import all_layers
from keras_capsules.layers.votes import MatrixVotes, VectorVotes

#: Layer types whose kernels are pruned (REM: Conv2d, Conv3d and the capsule layers' W).
PRUNING_LAYERS = (
    keras.layers.Conv1D,
    keras.layers.Conv2D,
    keras.layers.Conv3D,
    keras.layers.Conv1DTranspose,
    keras.layers.Conv2DTranspose,
    keras.layers.Conv3DTranspose,
    keras.layers.DepthwiseConv1D,
    keras.layers.DepthwiseConv2D,
    keras.layers.SeparableConv1D,
    keras.layers.SeparableConv2D,
    VectorVotes,
    MatrixVotes,
)
#: Variable names of the prunable weights inside a pruning layer (REM: parameters named ``weight``).
KERNEL_NAMES = ("kernel", "depthwise_kernel", "pointwise_kernel")


def pruning_layers(model, layer_types=None):
    """The layers of ``model`` (nested ones included) that are instances of ``layer_types`` (default :data:`PRUNING_LAYERS`)."""
    types = PRUNING_LAYERS if layer_types is None else tuple(layer_types)
    return [layer for layer in all_layers(model) if isinstance(layer, types)]


def unique_variables(variables):
    """``variables`` without repeats (shared weights), in order."""
    return list({id(v): v for v in variables}.values())


def prunable_weights(model, layer_types=None):
    """The kernels that magnitude pruning zeroes, in model order.

    Args:
        model: a Keras model.
        layer_types: layer classes to prune (default :data:`PRUNING_LAYERS`).
    """
    found = unique_variables(
        v for layer in pruning_layers(model, layer_types) for v in layer.trainable_weights if v.name in KERNEL_NAMES
    )
    if not found:
        errors.fail(
            "pruning.prunable_weights",
            "model",
            f"a model with trainable kernels in {[t.__name__ for t in (layer_types or PRUNING_LAYERS)]}",
            model.name,
        )
    return found
