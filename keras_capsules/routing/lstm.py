"""Connectionist (LSTM) routing of the inner-consensus paper (docs/reference/routers.md#lstm-routing).

The paper: *Learning to compute inner consensus: a novel approach to modeling agreement between capsules*.
"""

import functools

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.ops.remat import remat_reading
from keras_capsules.routing.base import Router, child_major, limit_votes, ones_activations, weighted_votes
from keras_capsules.routing.registry import register_router

ACTIVATIONS = ("sigmoid", "linear")
STATE_ASSIGNMENTS = ("code", "paper")


def _units(owner, argument, value):
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        errors.fail(owner, argument, "a list of positive integers (hidden layer widths)", value, TypeError)
    return tuple(errors.check_positive_int(owner, argument, width) for width in value)


@register_router("lstm")
class LSTMRouter(Router):
    """Connectionist (LSTM) routing of the inner-consensus paper: a learned LSTM cell proposes the compatibilities.

    One LSTM cell per capsule layer, shared by every child, parent and position, reads at each iteration
    the parent's pose, the child's activation, its vote and its coupling, and two small MLPs (ReLU layers,
    then ``Dense(1)``) turn its states into compatibilities and into the parent's activation. With votes
    ``v`` ``(batch, in_caps, out_caps, d)`` and child activations ``a`` ``(batch, in_caps)`` (ones when
    absent):

        c_ij = 1 / in_caps;  mu_j = sum_i c_ij v_j|i;  (cell_ij, hidden_ij) = 0
        repeat iterations times:
            (cell_ij, hidden_ij) = LSTMCell([mu_j, a_i, v_j|i, c_ij], (cell_ij, hidden_ij))   2 d + 2 features
            c_ij = softmax over the children i of MLP_c(cell_ij)          (batch, in_caps, out_caps)
            mu_j = sum_i c_ij v_j|i                                       (batch, out_caps, d)
        a_j = sigmoid(MLP_a(sum_i c_ij hidden_ij))                        (batch, out_caps)

    The cell is Keras' (gates ``i, f, g, o``), ``4 units (2 d + 2 + units + 1)`` weights (3,264 for 16
    units and 4x4 poses). The LSTM reads each example's votes scaled down to ``max|u| <= 1e15`` when larger
    (:func:`~keras_capsules.routing.base.limit_votes`: its projections would overflow), while the output
    poses are the coupling-weighted sums of the unscaled votes.

    Args:
        iterations: LSTM steps. Defaults to 3 (the paper).
        units: LSTM units (the code's ``degree``). Defaults to 16.
        compatibility_units: hidden ReLU widths of ``MLP_c``. Defaults to ``()``.
        activation_units: hidden ReLU widths of ``MLP_a``. Defaults to ``()``. The paper's network uses
            ``[]/[]``, ``[32, 32]/[64, 64]`` and ``[64, 64]/[124, 124]`` (compatibility/activation) for
            its three routing layers.
        activation: ``"sigmoid"``, or ``"linear"`` for the logit (the code's ``activate=False``, for a
            class layer trained with softmax cross-entropy). Defaults to ``"sigmoid"``.
        state_assignment: ``"code"``: the cell state feeds ``MLP_c`` and the hidden state ``MLP_a``, as
            the authors' code does; ``"paper"``: the reverse, as the paper describes. Defaults to ``"code"``.
        unit_forget_bias: initialise the forget-gate bias to 1. Defaults to ``True``.
        kernel_initializer, recurrent_initializer, dense_initializer: of the LSTM input kernel, its
            recurrent kernel and the MLP layers. Default to ``"glorot_uniform"``, ``"orthogonal"`` and
            ``"glorot_uniform"``.
        **kwargs: ``quantize_levels``, ``jit_compile`` (see :class:`Router`) and the
            ``keras.layers.Layer`` arguments.

    Example:
        >>> router = LSTMRouter(compatibility_units=[32, 32], activation_units=[64, 64])
        >>> votes, activations = keras.random.normal((4, 72, 5, 16)), keras.random.uniform((4, 72))
        >>> poses, out_activations = router(votes, activations)  # (4, 5, 16), (4, 5)

    See the routers reference (docs/reference/routers.md#lstm-routing) and docs/routers/lstm.md for the
    numerical safeguards and the differences from the authors' code.
    """

    accepts_parent_major = True
    coupling_sums_over = "children"

    def __init__(
        self,
        iterations=3,
        units=16,
        compatibility_units=(),
        activation_units=(),
        activation="sigmoid",
        state_assignment="code",
        unit_forget_bias=True,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        dense_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(iterations=iterations, **kwargs)
        self.units = errors.check_positive_int(self, "units", units)
        self.compatibility_units = _units(self, "compatibility_units", compatibility_units)
        self.activation_units = _units(self, "activation_units", activation_units)
        self.activation = errors.check_one_of(self, "activation", activation, ACTIVATIONS)
        self.state_assignment = errors.check_one_of(self, "state_assignment", state_assignment, STATE_ASSIGNMENTS)
        self.unit_forget_bias = bool(unit_forget_bias)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.recurrent_initializer = keras.initializers.get(recurrent_initializer)
        self.dense_initializer = keras.initializers.get(dense_initializer)

        def dense(width, activation, name):
            return keras.layers.Dense(
                width,
                activation=activation,
                kernel_initializer=type(self.dense_initializer).from_config(self.dense_initializer.get_config()),
                dtype="float32",
                name=name,
            )

        self.compatibility_mlp = [
            dense(w, "relu", f"compatibility_{i}") for i, w in enumerate(self.compatibility_units)
        ]
        self.compatibility_head = dense(1, None, "compatibility_logits")
        self.activation_mlp = [dense(w, "relu", f"activation_{i}") for i, w in enumerate(self.activation_units)]
        self.activation_head = dense(1, "sigmoid" if self.activation == "sigmoid" else None, "activation_output")

    def _weight(self, name, shape, initializer):
        # float32 whatever the dtype policy: the routing maths are float32, and e.g. the orthogonal
        # initializer has no bfloat16 kernel.
        return self.add_weight(name=name, shape=shape, initializer=initializer, dtype="float32")

    def build_router(self, votes_shape):
        _, in_caps, out_caps, out_dim = votes_shape
        if None in (in_caps, out_caps, out_dim):
            errors.fail(self, "votes", "known in_caps, out_caps and out_dim", f"shape {votes_shape}")
        gates = 4 * self.units
        self.lstm_kernel = self._weight(
            name="lstm_kernel", shape=(2 * out_dim + 2, gates), initializer=self.kernel_initializer
        )
        self.lstm_recurrent_kernel = self._weight(
            name="lstm_recurrent_kernel", shape=(self.units, gates), initializer=self.recurrent_initializer
        )
        if self.unit_forget_bias:
            units = self.units

            def bias_initializer(shape, dtype=None):
                return ops.concatenate(
                    [
                        ops.zeros((units,), dtype=dtype),
                        ops.ones((units,), dtype=dtype),
                        ops.zeros((2 * units,), dtype=dtype),
                    ]
                )

        else:
            bias_initializer = "zeros"
        self.lstm_bias = self._weight(name="lstm_bias", shape=(gates,), initializer=bias_initializer)
        for stack, head in (
            (self.compatibility_mlp, self.compatibility_head),
            (self.activation_mlp, self.activation_head),
        ):
            shape = (None, self.units)
            for layer in stack + [head]:
                layer.build(shape)
                shape = (None, layer.units)

    def _pre_activation(self, inputs, kernel, pose_part, gate):
        """One gate's pre-activation ``(b, o, i, u)``: the per-pair inputs through the gate's columns, plus the pose part."""
        u = self.units
        return (
            ops.einsum("boik,kg->boig", inputs, kernel[:, gate * u : (gate + 1) * u])
            + pose_part[..., gate * u : (gate + 1) * u]
        )

    def _first_iteration(self, child_inputs, child_kernel, pose_part):
        """The first LSTM step, from the zero state: no recurrent product and no forget gate."""
        pre_activation = functools.partial(self._pre_activation, child_inputs, child_kernel, pose_part)
        cell = ops.sigmoid(pre_activation(gate=0)) * ops.tanh(pre_activation(gate=2))
        hidden = ops.sigmoid(pre_activation(gate=3)) * ops.tanh(cell)
        return cell, hidden, self._compatibility(cell, hidden)

    def _iteration(self, child_inputs, kernel, pose_part, coupling, cell, hidden):
        """A later LSTM step: votes, activations, coupling and hidden state through one product per gate."""
        inputs = ops.concatenate([child_inputs, ops.expand_dims(coupling, -1), hidden], axis=-1)  # (b, o, i, d + 2 + u)
        pre_activation = functools.partial(self._pre_activation, inputs, kernel, pose_part)
        cell = ops.sigmoid(pre_activation(gate=1)) * cell + ops.sigmoid(pre_activation(gate=0)) * ops.tanh(
            pre_activation(gate=2)
        )
        hidden = ops.sigmoid(pre_activation(gate=3)) * ops.tanh(cell)
        return cell, hidden, self._compatibility(cell, hidden)

    def _compatibility(self, cell, hidden):
        """The compatibility logits ``(b, o, i)`` from the state the assignment names."""
        features = cell if self.state_assignment == "code" else hidden
        return self._mlp(self.compatibility_mlp, self.compatibility_head, features)[..., 0]

    @staticmethod
    def _mlp(stack, head, x):
        for layer in stack:
            x = layer(x)
        return head(x)

    def route_parent_major(self, votes, activations, training):
        in_caps, out_dim = (
            votes.shape[2],
            votes.shape[3],
        )  # votes (b, o, i, d): the iterations are batched matrix products
        if activations is None:
            activations = ones_activations(votes, in_axis=2)
        raw_votes = votes
        votes = limit_votes(votes)  # the LSTM's input features (unchanged below 1e15; either layout)
        kernel = ops.cast(self.lstm_kernel, "float32")
        k_pose, k_coupling = kernel[:out_dim], kernel[2 * out_dim + 1]
        # The per-pair inputs that do not change across iterations, votes and child activations,
        # (b, o, i, d + 1), and their rows of W; each step forms every gate's pre-activation with one
        # product from them (later steps append the coupling and the hidden state), so no
        # gate-sized tensor outlives its step.
        acts = ops.broadcast_to(ops.expand_dims(ops.expand_dims(activations, 1), -1), ops.shape(votes)[:3] + (1,))
        child_inputs = ops.concatenate([votes, ops.cast(acts, votes.dtype)], axis=-1)
        child_kernel = ops.concatenate([kernel[out_dim + 1 : 2 * out_dim + 1], kernel[out_dim : out_dim + 1]], axis=0)
        step_kernel = ops.concatenate(
            [child_kernel, ops.expand_dims(k_coupling, 0), ops.cast(self.lstm_recurrent_kernel, "float32")], axis=0
        )
        bias = ops.cast(self.lstm_bias, "float32")

        poses = ops.mean(votes, axis=2)  # the uniform coupling 1/n
        coupling = None  # the first step's uniform coupling is a constant term
        # Training recomputes each step's gates and MLP activations in the backward pass: a step
        # keeps only its carried state, not its gate and MLP temporaries.
        first = remat_reading(self._first_iteration, self.weights) if training else self._first_iteration
        later = remat_reading(self._iteration, self.weights) if training else self._iteration
        for step in range(self.iterations):
            pose_part = ops.expand_dims(
                ops.einsum("bod,dg->bog", poses, k_pose) + bias, 2
            )  # (b, o, 1, 4u), with the bias
            if step == 0:
                # The uniform first coupling enters as a constant (b, o, 1, 4u) term.
                *state, logits = first(child_inputs, child_kernel, pose_part + k_coupling / in_caps)
            else:
                *state, logits = later(child_inputs, step_kernel, pose_part, coupling, *state)
            coupling = ops.softmax(logits, axis=2)
            last = step == self.iterations - 1
            if last:
                coupling = self.finalize_coupling(coupling, training)
            poses = weighted_votes(coupling, raw_votes if last else votes)

        summary_state = state[1] if self.state_assignment == "code" else state[0]
        pooled = ops.einsum("boi,boiu->bou", coupling, summary_state)
        out_acts = self._mlp(self.activation_mlp, self.activation_head, pooled)[..., 0]
        return poses, out_acts, child_major(coupling)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "compatibility_units": list(self.compatibility_units),
                "activation_units": list(self.activation_units),
                "activation": self.activation,
                "state_assignment": self.state_assignment,
                "unit_forget_bias": self.unit_forget_bias,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "recurrent_initializer": keras.initializers.serialize(self.recurrent_initializer),
                "dense_initializer": keras.initializers.serialize(self.dense_initializer),
            }
        )
        return config
