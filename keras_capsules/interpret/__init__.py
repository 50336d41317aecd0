"""Interpretability tools: coupling access, REM, parse trees, saliency, GLOM island views."""

# Coupling access, REM quantisation, parse trees, routing entropy, saliency (docs/reference/rem.md; docs/rem.md).
from keras_capsules.interpret.coupling import (  # noqa: F401
    LayerRouting,
    RoutingTrace,
    quantization,
    routers,
    routing_layer_names,
    routing_probe,
    routing_trace,
    set_quantization,
)
from keras_capsules.interpret.explain import explain  # noqa: F401
from keras_capsules.interpret.fc_tree import fc_parse_tree, plot_parse_tree  # noqa: F401
from keras_capsules.interpret.glom_views import arrow_field, island_colors, plot_arrows, plot_islands  # noqa: F401  (GLOM views)
from keras_capsules.interpret.parse_trees import ParseTreeDictionary, parse_tree_report, tree_keys  # noqa: F401
from keras_capsules.interpret.perturbation import dimension_perturbations, plot_dimension_perturbations  # noqa: F401
from keras_capsules.interpret.saliency import plot_saliency, saliency_maps  # noqa: F401
