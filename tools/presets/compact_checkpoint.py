"""Shrinks a training checkpoint to float16 model weights for git, and turns it back into one `train` resumes.

A run that spans sessions on machines that do not keep their disks needs its newest checkpoint in the
repository, and most of a checkpoint's bytes are the optimizer's moments (Adam: two per weight).

    python tools/presets/compact_checkpoint.py pack RUN/epoch-0004 tools/presets/in_progress/NAME/checkpoint
    python tools/presets/compact_checkpoint.py unpack tools/presets/in_progress/NAME/checkpoint RUN

``pack`` writes ``weights-float16.h5`` (every floating model variable in float16; the optimizer's scalars,
its iteration count among them, kept as they are; its other variables, the moments, left out with only
their shapes and dtypes recorded) and the checkpoint's ``state.json``. ``unpack`` writes
``RUN/epoch-NNNN/`` back in the layout of :mod:`keras_capsules.training.checkpoints`: float32 weights,
the moments as zeros, the iteration count kept (so a learning-rate schedule continues where it was),
and ``state.json`` with the new file's size and sha256 and a ``compacted`` entry saying so. Resuming
from it therefore restarts the optimizer's moments; the run's log must say so.
"""

import argparse
import json
import os
import shutil

import h5py
import numpy as np

from keras_capsules.hashing import file_sha256
from keras_capsules.training import checkpoints

PACKED_WEIGHTS = "weights-float16.h5"
OPTIMIZER_PREFIX = "optimizer/"


def _datasets(handle):
    """``[(path, dataset), ...]`` of every dataset in an open h5 file, in file order."""
    found = []
    handle.visititems(lambda path, item: found.append((path, item)) if isinstance(item, h5py.Dataset) else None)
    return found


def pack(checkpoint_dir, out_dir):
    """Writes ``out_dir/weights-float16.h5`` and ``out_dir/state.json`` from one ``epoch-NNNN`` checkpoint."""
    state = checkpoints.read_state(checkpoint_dir)
    os.makedirs(out_dir, exist_ok=True)
    source_path = os.path.join(checkpoint_dir, checkpoints.WEIGHTS_FILE)
    with h5py.File(source_path, "r") as source, h5py.File(os.path.join(out_dir, PACKED_WEIGHTS), "w") as packed:
        for path, dataset in _datasets(source):
            values = dataset[()]
            floating = np.issubdtype(dataset.dtype, np.floating)
            if path.startswith(OPTIMIZER_PREFIX) and dataset.ndim > 0:
                stub = packed.create_dataset(path, data=np.zeros((0,), dtype=np.int8))
                stub.attrs["dropped_shape"] = np.asarray(dataset.shape, dtype=np.int64)
                stub.attrs["dropped_dtype"] = str(dataset.dtype)
                continue
            if floating and not path.startswith(OPTIMIZER_PREFIX):
                small = values.astype(np.float16)
                if not np.all(np.isfinite(small)):
                    raise ValueError(f"compact_checkpoint.pack: {path} does not fit float16 (largest magnitude {np.max(np.abs(values)):.3g}).")
                stored = packed.create_dataset(path, data=small)
                stored.attrs["original_dtype"] = str(dataset.dtype)
            else:
                packed.create_dataset(path, data=values)
    with open(os.path.join(out_dir, checkpoints.STATE_FILE), "w") as handle:
        json.dump(state, handle, indent=2)
    return out_dir


def unpack(packed_dir, backup_dir):
    """Writes ``backup_dir/epoch-NNNN/`` (a checkpoint `train` resumes) from a folder written by :func:`pack`."""
    with open(os.path.join(packed_dir, checkpoints.STATE_FILE)) as handle:
        state = json.load(handle)
    final = os.path.join(backup_dir, f"epoch-{int(state['epochs_completed']):04d}")
    if os.path.exists(final):
        raise FileExistsError(f"compact_checkpoint.unpack: {final} exists already; resume from it or delete it first.")
    temporary = final + ".unpacking"
    shutil.rmtree(temporary, ignore_errors=True)
    os.makedirs(temporary)
    weights = os.path.join(temporary, checkpoints.WEIGHTS_FILE)
    with h5py.File(os.path.join(packed_dir, PACKED_WEIGHTS), "r") as packed, h5py.File(weights, "w") as restored:
        for path, dataset in _datasets(packed):
            if "dropped_shape" in dataset.attrs:
                shape = tuple(int(n) for n in dataset.attrs["dropped_shape"])
                restored.create_dataset(path, data=np.zeros(shape, dtype=np.dtype(dataset.attrs["dropped_dtype"])))
            elif "original_dtype" in dataset.attrs:
                restored.create_dataset(path, data=dataset[()].astype(np.dtype(dataset.attrs["original_dtype"])))
            else:
                restored.create_dataset(path, data=dataset[()])
    state.update(
        weights_bytes=os.path.getsize(weights),
        weights_sha256=file_sha256(weights),
        compacted="unpacked from float16 model weights; the optimizer's moments restart at zero, its iteration count is kept",
    )
    with open(os.path.join(temporary, checkpoints.STATE_FILE), "w") as handle:
        json.dump(state, handle, indent=2)
    os.replace(temporary, final)
    return final


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    pack_parser = commands.add_parser("pack", help="an epoch-NNNN checkpoint folder -> float16 weights and state.json")
    pack_parser.add_argument("checkpoint_dir")
    pack_parser.add_argument("out_dir")
    unpack_parser = commands.add_parser("unpack", help="a packed folder -> RUN_DIR/epoch-NNNN that train resumes")
    unpack_parser.add_argument("packed_dir")
    unpack_parser.add_argument("backup_dir")
    args = parser.parse_args(argv)
    if args.command == "pack":
        print(pack(args.checkpoint_dir, args.out_dir))
    else:
        print(unpack(args.packed_dir, args.backup_dir))


if __name__ == "__main__":
    main()
