"""The CPU allocator the command line asks TensorFlow for before it loads: its pooling (BFC) allocator.

TensorFlow allocates CPU tensors through ``malloc`` unless its BFC allocator is asked for
(``TF_CPU_ALLOCATOR_USE_BFC=true``) or oneDNN is on (which the command line turns off on TensorFlow 2.21,
:mod:`keras_capsules.cli.onednn`). glibc's ``malloc`` maps every block above 32 MB afresh and returns it to
the system when freed, so each training step pays page faults for each large tensor again: a
ConsensusCapsNet MNIST step at batch 64 spent about a third of its time in the kernel's page-fault handler.
The BFC allocator keeps freed blocks for the next step (``benchmarks/cpu_allocator.py`` measures both).
The command line asks for it unless the variable is already set (``TF_CPU_ALLOCATOR_USE_BFC=false`` keeps
``malloc``). Python code that trains with the library sets the variable itself, before importing TensorFlow.
"""

import os
import sys

#: The environment variable TensorFlow reads once, when it creates its CPU allocator.
VARIABLE = "TF_CPU_ALLOCATOR_USE_BFC"


def pool_unless_set(environ=os.environ, modules=sys.modules):
    """Sets ``TF_CPU_ALLOCATOR_USE_BFC=true`` in ``environ`` before TensorFlow is imported.

    Left alone: a value the user set, a TensorFlow already imported (the setting is read when it loads).

    Args:
        environ: the environment to set (the process's).
        modules: the imported modules (the process's ``sys.modules``).

    Returns:
        Whether it set the variable.
    """
    if VARIABLE in environ or "tensorflow" in modules:
        return False
    environ[VARIABLE] = "true"
    return True
