"""Every notebook in examples/ runs top to bottom on small settings, so none of them rots."""

import glob
import os

import keras
import pytest

from keras_capsules.testing.tiers import large

DATA = os.environ.get("KERAS_CAPSULES_DATA", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
#: Notebooks that read real files besides the embedded MNIST sample (they download through TFDS otherwise).
NEEDS_DATA = {"08_fine_tune.ipynb": "fashion-mnist"}
NOTEBOOKS = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "examples", "*.ipynb")))


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="the notebooks use tf.data pipelines (TensorFlow backend)"
)
@large  # 20-100 s a notebook on 2 cores
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[os.path.basename(p) for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    needed = NEEDS_DATA.get(os.path.basename(path))
    if needed and not os.path.isdir(os.path.join(DATA, needed)):
        pytest.skip(
            f"{needed} files absent from {os.path.abspath(DATA)} (set KERAS_CAPSULES_DATA); the notebook would download them"
        )
    if os.path.isdir(DATA):
        monkeypatch.setenv(
            "KERAS_CAPSULES_DATA", os.path.abspath(DATA)
        )  # notebooks 02 and 04 fall back to the sample without it
    monkeypatch.setenv("KERAS_CAPSULES_EXAMPLE_SMALL", "1")
    monkeypatch.setenv("KERAS_CAPSULES_EXAMPLE_OUTPUT", str(tmp_path))
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    errors = [
        o
        for cell in notebook.cells
        if cell.cell_type == "code"
        for o in cell.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    assert not errors
