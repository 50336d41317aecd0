"""Node-edge parse trees of fully connected capsule layers (REM; docs/reference/rem.md#saliency-and-fc-parse-trees).

Nodes are capsules (coloured by activation) and edges are coupling coefficients. The tree is found by
backtracking from the predicted class: an edge ``i -> j`` into a kept capsule ``j`` is kept when
``c_ij`` exceeds the threshold, and a capsule contributes edges upwards only if its in-degree (the
number of its incoming couplings above the threshold) is at least 1; the first layer's children
have no incoming edges and always qualify. The paper does not give the threshold; the default is
``1/|Omega|`` with ``|Omega|`` the number of parents of the layer (the uniform coupling), so an edge
means "more than its uniform share". For a router whose coupling sums to 1 over the children instead
(FM agreement, kernel and LSTM routing), the uniform share is one over the number of children.
"""

import numpy as np

from keras_capsules import errors
from keras_capsules.interpret import plotting

#: Levels with more capsules than this show only the capsules in the tree.
MAX_DRAWN_CAPSULES = 48


def fc_routing_chain(trace, layers=None):
    """The consecutive FcCaps layers of a trace (each one's parents are the next one's children)."""
    chain = (
        [trace[name] for name in layers]
        if layers is not None
        else [r for r in trace.layers if r.layer_type == "FcCaps"]
    )
    if not chain:
        errors.fail("interpret.fc_routing_chain", "trace", "at least one FcCaps layer", [r.name for r in trace.layers])
    for below, above in zip(chain, chain[1:]):
        if below.coupling.shape[-1] != above.coupling.shape[1]:
            errors.fail(
                "interpret.fc_routing_chain",
                "layers",
                f"consecutive FcCaps layers ({below.name} has {below.coupling.shape[-1]} parents)",
                f"{above.name} with {above.coupling.shape[1]} children",
            )
    return chain


def fc_parse_tree(trace, index=0, layers=None, threshold=None):
    """The parse tree of example ``index`` through consecutive fully connected capsule layers.

    Args:
        trace: a :class:`~keras_capsules.interpret.RoutingTrace`.
        index: the example in the batch.
        layers: names of the consecutive FcCaps layers (default: every FcCaps layer in the trace).
        threshold: coupling threshold for edges and in-degrees; ``None`` uses each layer's uniform share,
            ``1/|Omega|`` (or one over its children where its coupling sums over the children).

    Returns:
        A dict: ``predicted`` (class), ``levels`` (one per capsule level, children of the first
        layer first: ``name``, ``activations``, ``in_degree``, ``kept`` indices), ``thresholds`` (one
        per routing layer) and ``edges`` (``(routing_layer, child, parent, coupling)`` tuples).
    """
    chain = fc_routing_chain(trace, layers)
    predicted = int(trace.predictions[index])
    couplings = [r.coupling[index].reshape(-1, r.coupling.shape[-1]) for r in chain]
    uniform = [1.0 / c.shape[0 if r.coupling_sums_over == "children" else 1] for r, c in zip(chain, couplings)]
    thresholds = uniform if threshold is None else [float(threshold)] * len(chain)
    levels = [{"name": f"{chain[0].name} children", "activations": chain[0].input_activations[index].reshape(-1)}]
    levels += [{"name": r.name, "activations": r.output_activations[index].reshape(-1)} for r in chain]
    levels[0]["in_degree"] = None
    for level, coupling, limit in zip(levels[1:], couplings, thresholds):
        level["in_degree"] = (coupling > limit).sum(axis=0)
    kept = {predicted}
    edges = []
    levels[-1]["kept"] = [predicted]
    for k in range(len(chain) - 1, -1, -1):
        coupling, limit = couplings[k], thresholds[k]
        below_degree = levels[k]["in_degree"]
        children = set()
        for j in sorted(kept):
            for i in np.flatnonzero(coupling[:, j] > limit):
                if below_degree is None or below_degree[i] >= 1:
                    edges.append((k, int(i), j, float(coupling[i, j])))
                    children.add(int(i))
        levels[k]["kept"] = sorted(children)
        kept = children
    for level in levels:
        level["activations"] = [float(a) for a in level["activations"]]
        if level["in_degree"] is not None:
            level["in_degree"] = [int(d) for d in level["in_degree"]]
    return {"predicted": predicted, "levels": levels, "thresholds": thresholds, "edges": sorted(edges)}


def plot_parse_tree(tree, path, title=None):
    """Draws a tree from :func:`fc_parse_tree` as a PNG: levels left to right, nodes coloured by activation.

    Edges are drawn as fuzzy strokes (a wide faint line under a narrow dark one), their width and
    opacity growing with the coupling. Levels with more than ``MAX_DRAWN_CAPSULES`` capsules show
    only the capsules in the tree. Returns ``path``.
    """
    levels = tree["levels"]
    figure = plotting.new_figure((2.2 * len(levels) + 1.5, 6.0))
    axis = figure.add_subplot(1, 1, 1)
    cmap = plotting.colormap("viridis")
    positions = []
    for x, level in enumerate(levels):
        size = len(level["activations"])
        shown = list(range(size)) if size <= MAX_DRAWN_CAPSULES else level["kept"]
        ys = np.linspace(0.95, 0.05, max(len(shown), 1)) if len(shown) > 1 else np.array([0.5])
        place = {node: (float(x), float(y)) for node, y in zip(shown, ys)}
        positions.append(place)
        kept = set(level["kept"])
        for node, (px, py) in place.items():
            value = level["activations"][node]
            axis.scatter(
                px,
                py,
                s=120 if node in kept else 50,
                color=cmap(min(max(value, 0.0), 1.0)),
                edgecolors="black" if node in kept else "none",
                linewidths=0.8,
                zorder=3,
            )
            if len(shown) <= MAX_DRAWN_CAPSULES:
                axis.annotate(str(node), (px, py), xytext=(6, 0), textcoords="offset points", fontsize=6, va="center")
        label = level["name"] if size <= MAX_DRAWN_CAPSULES else f"{level['name']}\n({len(shown)} of {size} shown)"
        axis.text(x, 1.02, label, ha="center", va="bottom", fontsize=8)
    for k, child, parent, coupling in tree["edges"]:
        (x0, y0), (x1, y1) = positions[k][child], positions[k + 1][parent]
        axis.plot(
            [x0, x1], [y0, y1], color="tab:red", alpha=0.15 * coupling + 0.05, linewidth=1.0 + 8.0 * coupling, zorder=1
        )
        axis.plot(
            [x0, x1], [y0, y1], color="tab:red", alpha=0.35 + 0.6 * coupling, linewidth=0.4 + 1.5 * coupling, zorder=2
        )
    axis.set_xlim(-0.5, len(levels) - 0.3)
    axis.set_ylim(-0.02, 1.12)
    axis.set_axis_off()
    axis.set_title(title or f"parse tree of predicted class {tree['predicted']}", fontsize=10)
    mappable = axis.scatter([], [], c=[], cmap=cmap, vmin=0.0, vmax=1.0)
    figure.colorbar(mappable, ax=axis, fraction=0.03, label="activation")
    return plotting.save_figure(figure, path)
