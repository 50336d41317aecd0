"""Vote transforms: child poses to votes ``u_j|i`` for every parent (docs/reference/routers.md)."""

import math

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.layers.capsule_tensor import as_float
from keras_capsules.serialization import register


class _VoteTransform(keras.layers.Layer):
    """Shared state of the vote transforms: ``num_capsules`` parents, ``shared`` and the kernel settings.

    With one ``W`` per child-parent pair the transforms run as one batched matmul with the children as
    the batch axis, rather than an ``einsum``: on TensorFlow's CPU kernels that is 1.5-2x faster forward
    plus backward at the papers' shapes (``benchmarks/votes.py``).
    """

    def __init__(self, num_capsules, shared, kernel_initializer, kernel_regularizer, kernel_constraint, **kwargs):
        super().__init__(**kwargs)
        self.num_capsules = errors.check_positive_int(self, "num_capsules", num_capsules)
        self.shared = bool(shared)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.kernel_constraint = keras.constraints.get(kernel_constraint)

    def check_children(self, input_shape):
        """Records the built ``(in_caps, in_dim)``; later calls must match them (a named error, not a reshape error)."""
        built = getattr(self, "_children_shape", None)
        received = tuple(input_shape[1:])
        if built is None:
            self._children_shape = received
        elif received != built:
            errors.fail(
                self,
                "inputs",
                f"children of shape (batch, {built[0]}, {built[1]}) (the shape the layer was built for)",
                f"shape {tuple(input_shape)}",
            )

    def add_kernel(self, in_caps, parent_shape):
        """``W`` of shape ``(num_capsules,) + parent_shape``, with a leading ``in_caps`` axis unless shared."""
        shape = (self.num_capsules,) + tuple(parent_shape)
        if not self.shared:
            shape = (in_caps,) + shape
        self.kernel = self.add_weight(
            name="kernel",
            shape=shape,
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_capsules": self.num_capsules,
                "shared": self.shared,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
                "kernel_constraint": keras.constraints.serialize(self.kernel_constraint),
            }
        )
        return config


@register
class VectorVotes(_VoteTransform):
    """Vector votes ``u_j|i = u_i W_ij`` with ``W_ij`` of shape ``(in_dim, capsule_dim)``.

    Input ``(batch, in_caps, in_dim)`` -> votes ``(batch, in_caps, num_capsules, capsule_dim)``, or
    with ``parent_major=True`` in the layout routers iterate in, ``(batch, num_capsules, in_caps,
    capsule_dim)``: one transpose of the matmul's output instead of two (this layout's and the router's).

    Args:
        num_capsules: number of parents ``out_caps``.
        capsule_dim: parent pose size ``out_dim``.
        shared: one ``W_j`` per parent shared by all children (``(out_caps, in_dim, out_dim)``) instead
            of one per child-parent pair (``(in_caps, out_caps, in_dim, out_dim)``).
        kernel_initializer, kernel_regularizer, kernel_constraint: for ``W``.
    """

    def __init__(
        self,
        num_capsules: int,
        capsule_dim: int,
        shared: bool = False,
        kernel_initializer: str | keras.initializers.Initializer = "glorot_uniform",
        kernel_regularizer: str | keras.regularizers.Regularizer | None = None,
        kernel_constraint: str | keras.constraints.Constraint | None = None,
        **kwargs,
    ) -> None:
        super().__init__(num_capsules, shared, kernel_initializer, kernel_regularizer, kernel_constraint, **kwargs)
        self.capsule_dim = errors.check_positive_int(self, "capsule_dim", capsule_dim)

    def build(self, input_shape):
        errors.check_rank(self, "inputs", input_shape, 3, "(batch, in_caps, in_dim)")
        _, in_caps, in_dim = input_shape
        if in_caps is None or in_dim is None:
            errors.fail(self, "inputs", "known in_caps and in_dim", f"shape {tuple(input_shape)}")
        self.check_children(input_shape)
        self.add_kernel(in_caps, (in_dim, self.capsule_dim))

    def call(self, poses, parent_major=False):
        poses = as_float(self, poses)
        self.check_children(poses.shape)
        kernel = ops.cast(self.kernel, poses.dtype)
        if self.shared:
            return ops.einsum("bid,ode->boie" if parent_major else "bid,ode->bioe", poses, kernel)
        # One (batch, in_dim) @ (in_dim, out_caps*out_dim) product per child, children as the matmul batch.
        in_caps, in_dim = poses.shape[1], poses.shape[2]
        kernel = ops.reshape(
            ops.transpose(kernel, (0, 2, 1, 3)), (in_caps, in_dim, self.num_capsules * self.capsule_dim)
        )
        votes = ops.matmul(ops.transpose(poses, (1, 0, 2)), kernel)
        votes = ops.reshape(votes, (in_caps, -1, self.num_capsules, self.capsule_dim))  # (in, batch, out, d)
        return ops.transpose(votes, (1, 2, 0, 3) if parent_major else (1, 0, 2, 3))

    def child_sums(self, poses):
        """The votes summed over the children, ``sum_i u_i W_ij``: ``(batch, num_capsules, capsule_dim)``.

        One matrix product of the children ``(batch, in_caps, in_dim)`` with the transform; the vote
        tensor is never formed. Computed in float32 whatever the compute dtype, as the routers sum
        votes: a sum of many float16 votes overflows where the votes themselves do not.
        """
        self.check_children(poses.shape)
        poses = ops.cast(poses, "float32")
        kernel = ops.cast(self.kernel, "float32")
        if self.shared:
            return ops.einsum("bd,ode->boe", ops.sum(poses, axis=1), kernel)
        return ops.einsum("bid,iode->boe", poses, kernel)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[1], self.num_capsules, self.capsule_dim)

    def get_config(self):
        config = super().get_config()
        config["capsule_dim"] = self.capsule_dim
        return config


@register
class MatrixVotes(_VoteTransform):
    """Matrix votes between ``p x p`` poses stored flat (``in_dim = p*p``).

    ``side="right"``: ``V_ij = P_i W_ij`` (EM routing, IBM; inverted dot-product attention, apple).
    ``side="left"``: ``V_ij = W_ij P_i`` (the inner-consensus code, ``equiTransform.py``).
    With ``normalize=True`` each ``W_ij`` is divided by its Frobenius norm ``sqrt(sum W^2 + epsilon)``
    (the inner-consensus paper's eq. 1).

    Input ``(batch, in_caps, p*p)`` -> votes ``(batch, in_caps, num_capsules, p*p)``, or with
    ``parent_major=True`` ``(batch, num_capsules, in_caps, p*p)`` (as :class:`VectorVotes`).

    Args:
        num_capsules: number of parents.
        shared: one ``W_j`` per parent for all children (``(out_caps, p, p)``) instead of
            ``(in_caps, out_caps, p, p)``.
        side: ``"right"`` or ``"left"``.
        normalize: Frobenius-normalise ``W``.
        epsilon: guard inside the Frobenius norm (the inner-consensus code uses 1e-5).
        kernel_initializer, kernel_regularizer, kernel_constraint: for ``W``.
    """

    def __init__(
        self,
        num_capsules: int,
        shared: bool = False,
        side: str = "right",
        normalize: bool = False,
        epsilon: float = 1e-5,
        kernel_initializer: str | keras.initializers.Initializer = "glorot_uniform",
        kernel_regularizer: str | keras.regularizers.Regularizer | None = None,
        kernel_constraint: str | keras.constraints.Constraint | None = None,
        **kwargs,
    ) -> None:
        super().__init__(num_capsules, shared, kernel_initializer, kernel_regularizer, kernel_constraint, **kwargs)
        self.side = errors.check_one_of(self, "side", side, ("right", "left"))
        self.normalize = bool(normalize)
        self.epsilon = float(epsilon)

    def build(self, input_shape):
        errors.check_rank(self, "inputs", input_shape, 3, "(batch, in_caps, p*p)")
        _, in_caps, in_dim = input_shape
        side = math.isqrt(in_dim) if in_dim else 0
        if not in_dim or side * side != in_dim:
            errors.fail(
                self,
                "inputs",
                "a capsule_dim that is a perfect square p*p (a flat p x p matrix pose)",
                f"capsule_dim {in_dim}",
            )
        self.pose_side = side
        self.check_children(input_shape)
        self.add_kernel(in_caps, (side, side))

    def transform_matrices(self, dtype):
        """``W`` as used in the product (Frobenius-normalised when ``normalize``)."""
        kernel = ops.cast(self.kernel, dtype)
        if self.normalize:
            kernel = kernel / ops.sqrt(ops.sum(ops.square(kernel), axis=(-2, -1), keepdims=True) + self.epsilon)
        return kernel

    def call(self, poses, parent_major=False):
        poses = as_float(self, poses)
        self.check_children(poses.shape)
        p = self.pose_side
        batch, in_caps = ops.shape(poses)[0], poses.shape[1]
        matrices = ops.reshape(poses, (batch, in_caps, p, p))
        kernel = self.transform_matrices(poses.dtype)
        out_caps = self.num_capsules
        layout = "boixz" if parent_major else "bioxz"
        if self.shared and self.side == "right":
            votes = ops.einsum(f"bixy,oyz->{layout}", matrices, kernel)
        elif self.shared:
            votes = ops.einsum(f"oxy,biyz->{layout}", kernel, matrices)
        elif self.side == "right":
            # Per child: (batch*p, p) @ (p, out_caps*p), children as the matmul batch.
            rows = ops.reshape(ops.transpose(matrices, (1, 0, 2, 3)), (in_caps, -1, p))
            kernel = ops.reshape(ops.transpose(kernel, (0, 2, 1, 3)), (in_caps, p, out_caps * p))
            votes = ops.reshape(ops.matmul(rows, kernel), (in_caps, -1, p, out_caps, p))  # (i, b, x, o, z)
            votes = ops.transpose(votes, (1, 3, 0, 2, 4) if parent_major else (1, 0, 3, 2, 4))
        else:
            # Per example and child: (out_caps*p, p) @ (p, p), the kernel broadcast over the batch. The
            # product comes out child-major, (b, i, o, x*z); the parent-major layout is one transpose of
            # 16-float blocks. (Children as the matmul batch, (i, o, x, b, z), needed a transpose that
            # moves 4-float blocks, about 2.5x slower forward and backward at ConsensusCapsNet's shapes.)
            votes = ops.matmul(ops.reshape(kernel, (1, in_caps, out_caps * p, p)), matrices)
            votes = ops.reshape(votes, (batch, in_caps, out_caps, p * p))
            if parent_major:
                votes = ops.transpose(votes, (0, 2, 1, 3))
        if parent_major:
            return ops.reshape(votes, (batch, out_caps, in_caps, p * p))
        return ops.reshape(votes, (batch, in_caps, out_caps, p * p))

    def child_sums(self, poses):
        """The votes summed over the children (``sum_i P_i W_ij`` or ``sum_i W_ij P_i``), ``(batch, num_capsules, p*p)``.

        One matrix product of the children ``(batch, in_caps, p*p)`` with the transform; the vote
        tensor is never formed. Computed in float32 whatever the compute dtype (see
        :meth:`VectorVotes.child_sums`).
        """
        self.check_children(poses.shape)
        poses = ops.cast(poses, "float32")
        p = self.pose_side
        batch, in_caps = ops.shape(poses)[0], poses.shape[1]
        matrices = ops.reshape(poses, (batch, in_caps, p, p))
        kernel = self.transform_matrices("float32")
        if self.shared:
            totals = ops.sum(matrices, axis=1)
            sums = (
                ops.einsum("bxy,oyz->boxz", totals, kernel)
                if self.side == "right"
                else ops.einsum("oxy,byz->boxz", kernel, totals)
            )
        elif self.side == "right":
            sums = ops.einsum("bixy,ioyz->boxz", matrices, kernel)
        else:
            sums = ops.einsum("ioxy,biyz->boxz", kernel, matrices)
        return ops.reshape(sums, (batch, self.num_capsules, p * p))

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[1], self.num_capsules, input_shape[2])

    def get_config(self):
        config = super().get_config()
        config.update({"side": self.side, "normalize": self.normalize, "epsilon": self.epsilon})
        return config


def make_votes(
    owner,
    transform,
    num_capsules,
    capsule_dim,
    shared,
    matrix_side,
    normalize_weights,
    kernel_initializer,
    kernel_regularizer,
    name,
):
    """Builds the vote-transform sublayer of a capsule layer from its arguments (with the owner's dtype policy)."""
    errors.check_one_of(owner, "transform", transform, ("vector", "matrix"))
    common = dict(
        num_capsules=num_capsules,
        shared=shared,
        kernel_initializer=kernel_initializer,
        kernel_regularizer=kernel_regularizer,
        name=name,
        dtype=owner.dtype_policy,
    )
    if transform == "vector":
        if capsule_dim is None:
            errors.fail(owner, "capsule_dim", "an integer for transform='vector'", capsule_dim)
        if normalize_weights:
            errors.fail(
                owner,
                "normalize_weights",
                "False for transform='vector' (Frobenius normalisation is for matrix poses)",
                normalize_weights,
            )
        return VectorVotes(capsule_dim=capsule_dim, **common)
    return MatrixVotes(side=matrix_side, normalize=normalize_weights, **common)
