"""``VectorRouting``: Heinsen's routing of vectors in sequences (Heinsen 2022) (docs/reference/routers.md#vector-routing-heinsen-2022)."""

import keras
from keras import ops

from keras_capsules import errors
from keras_capsules.ops.norms import limit_magnitude
from keras_capsules.routing.base import saturating_cast
from keras_capsules.serialization import register

#: Per-example bound on the inputs' largest magnitude (inputs within it are unchanged): with a variable number
#: of inputs the gains ``beta`` are linear in the inputs, so the outputs are quadratic in them.
INPUT_LIMIT = 1e8
#: Bound on an output vector's largest entry before the layer normalisation squares it (unchanged within it).
OUTPUT_LIMIT = 1e15
#: The E-step's logit for an ignored (input, output) pair: ``log f`` of anything the layer computes lies far above it.
IGNORED_LOGIT = -1e30
#: The normalisation's epsilon (PyTorch's ``LayerNorm`` default, which the official code uses).
NORM_EPSILON = 1e-5


@register
class VectorRouting(keras.layers.Layer):
    """Routes ``n_inp`` input vectors to ``n_out`` output vectors that best predict them (Heinsen 2022).

    The official code's ``EfficientVectorRouting`` (github.com/glassroom/heinsen_routing). Each input
    vector ``x_i`` has a score ``a_i`` and proposes a vote ``V_ij`` for every output ``j``, factorised so
    that the votes are never formed; each output is its votes weighted by "bang per bit" coefficients
    ``phi_ij`` that reward the share of ``f(a_i)`` the output uses and penalise the share it ignores; and
    the routing ``R_ij`` prefers the outputs that best predict the input vector ``x_i`` itself. With ``f``
    the logistic function, ``s_i = x_i / sqrt(n_inp)``, ``N`` a layer normalisation without scale or offset
    (the identity when ``d_out = 1``) and ``R_ij = 1 / n_out`` at first, for ``t = 0 .. n_iters - 1``:

        a_i      = W_A_i . s_i + B_A_i                                        (batch, n_inp)
        V_ij     = (s_i * W_F1_j) W_F2 + B_F2_j                               (batch, n_inp, n_out, d_out)
        E-step (t > 0)  P_j  = (N(x_out_j) W_G1) * W_G2_j + B_G2_j            (batch, n_out, d_inp)
                        R_ij = softmax_j log f((x_i . P_j) W_S_ij + B_S_ij)   (batch, n_inp, n_out)
        D-step          D_use_ij = f(a_i) R_ij,   D_ign_ij = f(a_i) - D_use_ij
        M-step          phi_ij  = beta_use_ij D_use_ij - beta_ign_ij D_ign_ij
                        x_out_j = sum_i phi_ij V_ij                           (batch, n_out, d_out)

    and the output is ``N(x_out)`` (``normalize=True``) or ``x_out``. With ``memory_efficient=True`` the
    M-step is ``((sum_i phi_ij s_i) * W_F1_j) W_F2 + (sum_i phi_ij) B_F2_j``, the same sum without the
    ``(batch, n_inp, n_out, d_out)`` votes.

    Weights, initialised as in the code: ``W_A`` ``(n_inp, d_inp)`` normal with standard deviation
    ``2 / sqrt(d_inp)``, ``B_A`` ``(n_inp,)`` zeros, ``W_F1`` ``(n_out, d_inp)`` standard normal, ``W_F2``
    ``(d_inp, d_out)`` normal ``2 / sqrt(d_inp)``, ``B_F2`` ``(n_out, d_out)`` zeros, ``W_G1``
    ``(d_out, d_inp)`` normal ``1 / sqrt(d_out)``, ``W_G2`` ``(n_out, d_inp)`` standard normal, ``B_G2``
    ``(n_out, d_inp)`` zeros, ``W_S`` ``(n_inp, n_out)`` normal ``1 / sqrt(d_inp)``, ``B_S`` ``(n_inp, n_out)``
    zeros, ``beta_use`` and ``beta_ign`` ``(n_inp, n_out)`` standard normal. With ``n_inp=None`` (a variable
    number of inputs: the code's ``n_inp=-1``) ``W_A``, ``B_A``, ``W_S`` and ``B_S`` have one row shared by
    every input, and the gains are computed from each input, ``beta_use_i = x_i K_use + b_use`` (likewise
    ``beta_ign``), kernels ``(d_inp, n_out)`` and biases ``(n_out,)`` uniform in ``+-1 / sqrt(d_inp)`` (a
    PyTorch ``Linear``).

    Numerical safeguards: the routing runs in float32 whatever the compute dtype (the weights are not
    autocast) and the output is cast to the compute dtype with saturation; each example's inputs are scaled by one factor
    so that their largest magnitude is at most ``1e8`` (inputs within it are unchanged), and each output
    vector's entries to at most ``1e15`` before it is normalised; ``log f`` is the stable log-sigmoid and the
    softmax subtracts its maximum. Finite inputs give finite outputs in float32, float16 and bfloat16.

    Input: ``(batch, n_inp, d_inp)`` (any number of inputs with ``n_inp=None``), and optionally
    ``ignore_mask``, boolean ``(n_inp, n_out)`` or ``(batch, n_inp, n_out)``, True where an output ignores an
    input (the code's ``mask``): the pair's ``f(a_i)`` is 0 and the routing of input ``i`` is a softmax over
    the outputs that do not ignore it (an input that every output ignores contributes nothing, where the code
    returns NaN).
    Output: ``(batch, n_out, d_out)``.

    Args:
        n_inp: the number of input vectors, or ``None`` for a variable number.
        n_out: the number of output vectors, at least 2.
        d_inp: the size of the input vectors.
        d_out: the size of the output vectors.
        n_iters: routing iterations (M-steps; ``n_iters - 1`` E-steps). Defaults to 2 (the code's).
        normalize: layer-normalise the output vectors (when ``d_out > 1``). Defaults to ``True``.
        memory_efficient: compute the M-step without forming the votes. Defaults to ``True``.
        **kwargs: the ``keras.layers.Layer`` arguments.

    Example:
        >>> layer = VectorRouting(n_inp=100, n_out=10, d_inp=64, d_out=32)
        >>> x_out = layer(keras.random.normal((8, 100, 64)))  # (8, 10, 32)

    See the routers reference (docs/reference/routers.md#vector-routing-heinsen-2022) and
    docs/routers/heinsen.md.
    """

    def __init__(
        self,
        n_inp: int | None,
        n_out: int,
        d_inp: int,
        d_out: int,
        n_iters: int = 2,
        normalize: bool = True,
        memory_efficient: bool = True,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.n_inp = None if n_inp is None else errors.check_positive_int(self, "n_inp", n_inp)
        self.n_out = errors.check_positive_int(self, "n_out", n_out, minimum=2)
        self.d_inp = errors.check_positive_int(self, "d_inp", d_inp)
        self.d_out = errors.check_positive_int(self, "d_out", d_out)
        self.n_iters = errors.check_positive_int(self, "n_iters", n_iters)
        for argument, value in (("normalize", normalize), ("memory_efficient", memory_efficient)):
            if not isinstance(value, bool):
                errors.fail(self, argument, "True or False", value, TypeError)
        self.normalize = normalize
        self.memory_efficient = memory_efficient

    def build(self, input_shape):
        errors.check_rank(self, "inputs", input_shape, 3, "(batch, n_inp, d_inp)")
        if input_shape[-1] != self.d_inp:
            errors.fail(
                self, "inputs", f"vectors of size d_inp={self.d_inp} (last axis)", f"shape {tuple(input_shape)}"
            )
        if self.n_inp is not None and input_shape[1] != self.n_inp:
            errors.fail(
                self,
                "inputs",
                f"n_inp={self.n_inp} input vectors (axis 1; n_inp=None takes any number)",
                f"shape {tuple(input_shape)}",
            )
        rows = 1 if self.n_inp is None else self.n_inp
        n_out, d_inp, d_out = self.n_out, self.d_inp, self.d_out

        def normal(stddev):
            return keras.initializers.RandomNormal(stddev=stddev)

        def weight(name, shape, initializer):
            return self.add_weight(name=name, shape=shape, initializer=initializer, autocast=False)

        self.W_A = weight("W_A", (rows, d_inp), normal(2.0 / d_inp**0.5))
        self.B_A = weight("B_A", (rows,), "zeros")
        self.W_F1 = weight("W_F1", (n_out, d_inp), normal(1.0))
        self.W_F2 = weight("W_F2", (d_inp, d_out), normal(2.0 / d_inp**0.5))
        self.B_F2 = weight("B_F2", (n_out, d_out), "zeros")
        self.W_G1 = weight("W_G1", (d_out, d_inp), normal(1.0 / d_out**0.5))
        self.W_G2 = weight("W_G2", (n_out, d_inp), normal(1.0))
        self.B_G2 = weight("B_G2", (n_out, d_inp), "zeros")
        self.W_S = weight("W_S", (rows, n_out), normal(1.0 / d_inp**0.5))
        self.B_S = weight("B_S", (rows, n_out), "zeros")
        if self.n_inp is not None:
            self.beta_use = weight("beta_use", (rows, n_out), normal(1.0))
            self.beta_ign = weight("beta_ign", (rows, n_out), normal(1.0))
        else:
            bound = 1.0 / d_inp**0.5
            uniform = keras.initializers.RandomUniform(-bound, bound)
            self.beta_use_kernel = weight("beta_use_kernel", (d_inp, n_out), uniform)
            self.beta_use_bias = weight("beta_use_bias", (n_out,), uniform)
            self.beta_ign_kernel = weight("beta_ign_kernel", (d_inp, n_out), uniform)
            self.beta_ign_bias = weight("beta_ign_bias", (n_out,), uniform)

    def call(self, inputs, ignore_mask=None):
        x = limit_magnitude(ops.cast(inputs, "float32"), axis=(1, 2), limit=INPUT_LIMIT)
        scaled = x * ops.rsqrt(ops.cast(ops.shape(x)[1], "float32"))
        f_a = ops.expand_dims(ops.sigmoid(ops.sum(scaled * self.W_A, axis=-1) + self.B_A), -1)  # (batch, n_inp, 1)
        keep = None
        if ignore_mask is not None:
            ignore = self._check_ignore_mask(ignore_mask, x.shape)
            keep = ops.cast(ops.logical_not(ignore), "float32")
            f_a = f_a * keep  # (batch, n_inp, n_out): an ignored pair has no share to use or ignore
        if self.n_inp is not None:
            beta_use, beta_ign = self.beta_use, self.beta_ign  # (n_inp, n_out)
        else:
            beta_use = ops.matmul(x, self.beta_use_kernel) + self.beta_use_bias  # (batch, n_inp, n_out)
            beta_ign = ops.matmul(x, self.beta_ign_kernel) + self.beta_ign_bias
        votes = None
        if not self.memory_efficient:
            votes = ops.matmul(ops.einsum("bid,jd->bijd", scaled, self.W_F1), self.W_F2) + self.B_F2
        x_out = None
        for iteration in range(self.n_iters):
            if iteration == 0:  # R_ij = 1 / n_out, or uniform over the outputs an input does not ignore
                routing = 1.0 / self.n_out if keep is None else keep / ops.maximum(ops.sum(keep, -1, keepdims=True), 1)
            else:
                predicted = ops.matmul(self._norm(x_out), self.W_G1) * self.W_G2 + self.B_G2  # (batch, n_out, d_inp)
                logits = ops.log_sigmoid(ops.einsum("bid,bjd->bij", x, predicted) * self.W_S + self.B_S)
                if keep is not None:
                    logits = ops.where(ignore, IGNORED_LOGIT, logits)
                routing = ops.softmax(logits, axis=-1)
            d_use = f_a * routing
            phi = beta_use * d_use - beta_ign * (f_a - d_use)  # (batch, n_inp, n_out)
            if votes is None:
                weighted = ops.einsum("bij,bid->bjd", phi, scaled) * self.W_F1  # (batch, n_out, d_inp)
                x_out = ops.matmul(weighted, self.W_F2) + ops.expand_dims(ops.sum(phi, axis=1), -1) * self.B_F2
            else:
                x_out = ops.einsum("bij,bijh->bjh", phi, votes)
        if self.normalize:
            x_out = self._norm(x_out)
        return saturating_cast(x_out, self.compute_dtype)

    def _check_ignore_mask(self, ignore_mask, input_shape):
        """``ignore_mask`` as a boolean tensor, after checking that it is ``(n_inp, n_out)`` or ``(batch, n_inp, n_out)``."""
        ignore = ops.convert_to_tensor(ignore_mask)
        shape = tuple(ignore.shape)
        n_inp = input_shape[1]
        if len(shape) not in (2, 3) or shape[-1] != self.n_out or None not in (n_inp, shape[-2]) and shape[-2] != n_inp:
            errors.fail(
                self,
                "ignore_mask",
                f"a boolean tensor (n_inp, n_out) or (batch, n_inp, n_out) with n_inp={n_inp}, n_out={self.n_out}",
                f"shape {shape}",
            )
        if keras.backend.standardize_dtype(ignore.dtype) != "bool":
            errors.fail(self, "ignore_mask", "a boolean tensor (True: the input is ignored)", f"dtype {ignore.dtype}")
        return ignore

    def _norm(self, x):
        """Layer normalisation over the last axis without scale or offset (the identity when ``d_out = 1``)."""
        if self.d_out == 1:
            return x
        x = limit_magnitude(x, axis=-1, limit=OUTPUT_LIMIT)
        centred = x - ops.mean(x, axis=-1, keepdims=True)
        return centred * ops.rsqrt(ops.mean(ops.square(centred), axis=-1, keepdims=True) + NORM_EPSILON)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.n_out, self.d_out)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "n_inp": self.n_inp,
                "n_out": self.n_out,
                "d_inp": self.d_inp,
                "d_out": self.d_out,
                "n_iters": self.n_iters,
                "normalize": self.normalize,
                "memory_efficient": self.memory_efficient,
            }
        )
        return config
