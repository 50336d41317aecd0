"""Run the example notebooks at the small settings CI uses and store their outputs for the documentation site.

    python docs/execute_notebooks.py [NOTEBOOK.ipynb ...]     # default: every examples/*.ipynb

Each notebook runs top to bottom in a fresh kernel, in a temporary working directory, with
``KERAS_CAPSULES_EXAMPLE_SMALL=1`` and ``KERAS_CAPSULES_EXAMPLE_OUTPUT=example_outputs``; the executed
notebook replaces the file in place, its outputs included, and its metadata records the settings and a
hash of its code cells (``tests/docs_test.py`` fails when a cell changed after its outputs were stored).
Set ``KERAS_CAPSULES_DATA`` to the folder holding ``fashion-mnist/`` first: notebooks 02 and 08 read it.
"""

import glob
import hashlib
import os
import re
import sys
import sysconfig
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
#: TensorFlow's start-up lines on stderr, printed whatever TF_CPP_MIN_LOG_LEVEL says (the CUDA ones on a machine without a GPU driver).
NOISE = re.compile(
    r"^(WARNING: All log messages before absl::InitializeLog\(\).*|I0000 .*oneDNN custom operations.*"
    r"|I0000 .*Could not find cuda drivers.*|E0000 .*failed call to cuInit.*)\n?",
    re.M,
)
SETTINGS = {
    "KERAS_CAPSULES_EXAMPLE_SMALL": "1",
    "KERAS_CAPSULES_EXAMPLE_OUTPUT": "example_outputs",
    "TF_CPP_MIN_LOG_LEVEL": "2",
}


def code_hash(notebook):
    """SHA-256 of the notebook's code cells, in order (what the stored outputs were computed from)."""
    sources = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    return hashlib.sha256("\n\x00\n".join(sources).encode()).hexdigest()


def tidy(notebook, workdir):
    """Drops TensorFlow's start-up lines, writes paths of this machine short (site-packages, the repository, the
    temporary working directory ``workdir``) and joins consecutive outputs of one stream."""
    paths = {sysconfig.get_paths()["purelib"]: "site-packages", ROOT: ".", workdir + os.sep: ""}
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        for output in cell.outputs:
            if output.output_type == "stream":
                text = NOISE.sub("", output.text)
                for path, short in paths.items():
                    text = text.replace(path, short)
                output.text = text
        merged = []
        for output in cell.outputs:
            if output.output_type == "stream" and not output.text:
                continue
            if (
                output.output_type == "stream"
                and merged
                and merged[-1].output_type == "stream"
                and merged[-1].name == output.name
            ):
                merged[-1].text += output.text  # one block per run of printed lines, as a terminal shows them
            else:
                merged.append(output)
        cell.outputs = merged


def execute(path):
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    os.environ.update(SETTINGS)
    with tempfile.TemporaryDirectory() as workdir:
        NotebookClient(
            notebook, timeout=600, kernel_name="python3", record_timing=False, resources={"metadata": {"path": workdir}}
        ).execute()
    tidy(notebook, os.path.realpath(workdir))
    notebook.metadata["keras_capsules"] = {
        "outputs": "KERAS_CAPSULES_EXAMPLE_SMALL=1 (the CI settings)",
        "code_sha256": code_hash(notebook),
    }
    nbformat.write(notebook, path)


if __name__ == "__main__":
    for path in sys.argv[1:] or sorted(glob.glob(os.path.join(ROOT, "examples", "*.ipynb"))):
        print("executing", os.path.relpath(path, ROOT), flush=True)
        execute(path)
