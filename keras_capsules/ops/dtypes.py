"""Floating-point dtype facts shared by the ops, layers and routers."""

import numpy as np

#: Dtype names computed in float32 by the norms, squashes and routers, and cast back.
LOW_PRECISION = ("float16", "bfloat16")


def dtype_max(dtype):
    """Largest finite value of a float dtype name (float16: 65504; bfloat16: ~3.39e38)."""
    if dtype == "bfloat16":
        return 3.3895313892515355e38
    return float(np.finfo(dtype).max)
