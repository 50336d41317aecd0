"""Halves a training checkpoint for git (float16 weights, bfloat16 optimizer moments) and turns it back into one `train` resumes.

A run that spans sessions on machines that do not keep their disks needs its newest checkpoint in the
repository, and most of a checkpoint's bytes are the optimizer's moments (Adam: two per weight).

    python tools/presets/compact_checkpoint.py pack RUN/epoch-0004 tools/presets/in_progress/NAME/checkpoint
    python tools/presets/compact_checkpoint.py unpack tools/presets/in_progress/NAME/checkpoint RUN

``pack`` writes ``compact.h5`` (every float32 model variable in float16; every float32 optimizer
variable that is not a scalar, the moments, as bfloat16, kept as the upper 16 bits of each float32 so
that Adam's tiny second moments neither underflow nor turn into zeros; the iteration count and any
other variable as it is) and the checkpoint's ``state.json``. ``unpack`` writes ``RUN/epoch-NNNN/``
back in the layout of :mod:`keras_capsules.training.checkpoints` (float32 everywhere, the iteration
count kept, so a learning-rate schedule continues where it was) with ``state.json`` naming the new
file's size and sha256 and a ``compacted`` entry saying what was rounded. The run's log must say which
resume came from such a file.

Why not float16 weights alone, by default: a run resumed with Adam's moments at zero and its iteration count
kept (bias correction near 1) takes a step of about 3 learning rates on every weight at once, and steps of
1.3-6.5 learning rates for the next thousand (the second moment, beta2 = 0.999, builds up again slowly); on
AgreementGLOM's contrastive stage that sent the SupCon loss from 4.55 back to 5.8 in three steps.
``pack --weights-only`` does it all the same where the moments would make the file too big for git (a third
of the size: CapsNet's 8.2 M weights are 16 MB so, 49 MB with the moments); the run's log must then say that
the resume restarted the optimizer.
"""

import argparse
import json
import os

import h5py
import numpy as np

from keras_capsules.hashing import file_sha256
from keras_capsules.saving import atomic
from keras_capsules.training import checkpoints

PACKED_WEIGHTS = "compact.h5"
OPTIMIZER_PREFIX = "optimizer/"


def _datasets(handle):
    """``[(path, dataset), ...]`` of every dataset in an open h5 file, in file order."""
    found = []
    handle.visititems(lambda path, item: found.append((path, item)) if isinstance(item, h5py.Dataset) else None)
    return found


def pack(checkpoint_dir, out_dir, weights_only=False):
    """Writes ``out_dir/compact.h5`` and ``out_dir/state.json`` from one ``epoch-NNNN`` checkpoint.

    With ``weights_only`` the optimizer's moments are not stored (only their shapes: :func:`unpack` restarts
    them at zero), a third of the size; the iteration count is kept, so a learning-rate schedule continues."""
    state = checkpoints.read_state(checkpoint_dir)
    os.makedirs(out_dir, exist_ok=True)
    source_path = os.path.join(checkpoint_dir, checkpoints.WEIGHTS_FILE)
    with h5py.File(source_path, "r") as source, h5py.File(os.path.join(out_dir, PACKED_WEIGHTS), "w") as packed:
        for path, dataset in _datasets(source):
            values = dataset[()]
            float32 = dataset.dtype == np.float32
            if float32 and not path.startswith(OPTIMIZER_PREFIX):
                with np.errstate(over="ignore"):  # reported below, by name
                    small = values.astype(np.float16)
                if not np.all(np.isfinite(small)):
                    raise ValueError(
                        f"compact_checkpoint.pack: {path} does not fit float16 (largest magnitude {np.max(np.abs(values)):.3g})."
                    )
                packed.create_dataset(path, data=small).attrs["stored_as"] = "float16"
            elif float32 and dataset.ndim > 0 and weights_only:
                packed.create_dataset(path, data=np.asarray(dataset.shape, np.int64)).attrs["stored_as"] = (
                    "zeros"  # its shape alone
                )
            elif float32 and dataset.ndim > 0:
                upper_bits = (values.view(np.uint32) >> 16).astype(np.uint16)
                packed.create_dataset(path, data=upper_bits).attrs["stored_as"] = "bfloat16"
            else:  # the iteration count, other scalars and non-float32 variables, as they are
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
    with atomic.atomic_directory(final) as folder:
        weights = os.path.join(folder, checkpoints.WEIGHTS_FILE)
        with h5py.File(os.path.join(packed_dir, PACKED_WEIGHTS), "r") as packed, h5py.File(weights, "w") as restored:
            for path, dataset in _datasets(packed):
                stored_as = dataset.attrs.get("stored_as")
                if stored_as == "zeros":
                    values = np.zeros(tuple(int(n) for n in dataset[()]), np.float32)
                elif stored_as == "bfloat16":
                    values = (dataset[()].astype(np.uint32) << 16).view(np.float32)
                elif stored_as == "float16":
                    values = dataset[()].astype(np.float32)
                else:
                    values = dataset[()]
                restored.create_dataset(path, data=values)
            restarted = any(dataset.attrs.get("stored_as") == "zeros" for _, dataset in _datasets(packed))
        state.update(
            weights_bytes=os.path.getsize(weights),
            weights_sha256=file_sha256(weights),
            compacted="unpacked from float16 model weights; the optimizer's moments restarted at zero (not packed); the iteration count is exact"
            if restarted
            else "unpacked from float16 model weights and bfloat16 optimizer moments; the iteration count is exact",
        )
        with open(os.path.join(folder, checkpoints.STATE_FILE), "w") as handle:
            json.dump(state, handle, indent=2)
    return final


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    pack_parser = commands.add_parser("pack", help="an epoch-NNNN checkpoint folder -> compact.h5 and state.json")
    pack_parser.add_argument("checkpoint_dir")
    pack_parser.add_argument("out_dir")
    pack_parser.add_argument(
        "--weights-only", action="store_true", help="leave the optimizer's moments out (restarted at zero on unpack)"
    )
    unpack_parser = commands.add_parser("unpack", help="a packed folder -> RUN_DIR/epoch-NNNN that train resumes")
    unpack_parser.add_argument("packed_dir")
    unpack_parser.add_argument("backup_dir")
    args = parser.parse_args(argv)
    if args.command == "pack":
        print(pack(args.checkpoint_dir, args.out_dir, weights_only=args.weights_only))
    else:
        print(unpack(args.packed_dir, args.backup_dir))


if __name__ == "__main__":
    main()
