"""Training (TensorFlow backend): paper recipes end to end, distribution strategies, fault-tolerant checkpoints.

- :func:`train`: the ``keras-capsules train`` entry point, multi-stage recipes included (GLOM's
  contrastive pre-training, then its head; checkpoints and resume across the stages).
- :func:`get_strategy`, :func:`distributed_fit`, :func:`distributed_evaluate`,
  :func:`fit_custom_loop`: ``MirroredStrategy`` with ``fit`` and the ``MultiWorkerMirroredStrategy``
  custom loop (``docs/distributed.md``).
- :class:`EpochCheckpoint`, :func:`restore_checkpoint`: atomic per-epoch checkpoints with optimizer state.
- :func:`evaluate`: a model or ``.keras`` file on a dataset split.
- ``keras_capsules.training.pruning``: REM pruning.
- ``keras_capsules.training.memory_plan``: the memory plan ``train`` prints and checks before the first step
  (:func:`~keras_capsules.training.memory_plan.estimate`, :func:`~keras_capsules.training.memory_plan.check`).

Saving and loading ``.keras`` files: :mod:`keras_capsules.saving`; SavedModel, ONNX and LiteRT export:
:mod:`keras_capsules.export`.
"""

from keras_capsules.training.checkpoints import CheckpointError, EpochCheckpoint, restore_checkpoint, save_checkpoint
from keras_capsules.training.custom_loop import fit_custom_loop
from keras_capsules.training.distribute import distributed_evaluate, distributed_fit, get_strategy, is_multi_worker
from keras_capsules.training.evaluation import evaluate
from keras_capsules.training.train import build_model, train

__all__ = [
    "CheckpointError",
    "EpochCheckpoint",
    "build_model",
    "distributed_evaluate",
    "distributed_fit",
    "evaluate",
    "fit_custom_loop",
    "get_strategy",
    "is_multi_worker",
    "restore_checkpoint",
    "save_checkpoint",
    "train",
]
