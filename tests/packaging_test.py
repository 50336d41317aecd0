"""The built wheel: its requirements (``tensorflow`` on every platform, never ``tensorflow-cpu``; TFDS and scipy
as extras), its license and ``py.typed``; and the errors naming an extra when an optional dependency is missing."""

import email.parser
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from keras_capsules import datasets, version
from keras_capsules.datasets import formats, tfds_source
from keras_capsules.testing.tiers import large

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.xdist_group("packaging")

#: Marker environments of the platforms TensorFlow publishes wheels for.
PLATFORMS = {
    "linux x86_64": {
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": "x86_64",
        "os_name": "posix",
    },
    "linux aarch64": {
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": "aarch64",
        "os_name": "posix",
    },
    "macOS arm64": {
        "sys_platform": "darwin",
        "platform_system": "Darwin",
        "platform_machine": "arm64",
        "os_name": "posix",
    },
    "Windows": {"sys_platform": "win32", "platform_system": "Windows", "platform_machine": "AMD64", "os_name": "nt"},
}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel built from a copy of the source tree (so the build writes nothing into the repository)."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(os.path.join(ROOT, name), source / name)
    shutil.copytree(
        os.path.join(ROOT, "keras_capsules"),
        source / "keras_capsules",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    out = tmp_path_factory.mktemp("wheel")
    command = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "--quiet",
        "-w",
        str(out),
        str(source),
    ]
    result = subprocess.run(command, capture_output=True, text=True, cwd=source)
    assert result.returncode == 0, f"pip wheel failed:\n{result.stdout}\n{result.stderr}"
    (path,) = out.glob("keras_capsules-*.whl")
    return zipfile.ZipFile(path)


@pytest.fixture(scope="module")
def metadata(wheel):
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    return email.parser.Parser().parsestr(wheel.read(name).decode())


@pytest.fixture(scope="module")
def requirements(metadata):
    return [Requirement(line) for line in metadata.get_all("Requires-Dist")]


def _names(requirements, environment, extra=""):
    """Canonical names of the requirements installed on ``environment`` with ``extra`` ("" = no extra)."""
    return {
        canonicalize_name(r.name)
        for r in requirements
        if r.marker is None or r.marker.evaluate({**environment, "extra": extra})
    }


def _extras_of(requirements, name):
    """The extras whose ``extra == "..."`` marker brings in ``name`` (``None`` for an unconditional requirement)."""
    found = set()
    for r in requirements:
        if canonicalize_name(r.name) == name:
            match = re.fullmatch(r'extra == "([^"]+)"', str(r.marker)) if r.marker else None
            found.add(match.group(1) if match else None)
    return found


def test_tensorflow_unconditional_and_tensorflow_cpu_nowhere(requirements):
    names = [canonicalize_name(r.name) for r in requirements]
    assert "tensorflow-cpu" not in names
    (tensorflow,) = [r for r in requirements if canonicalize_name(r.name) == "tensorflow"]
    assert tensorflow.marker is None and str(tensorflow.specifier) == "<3,>=2.16"


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_each_platform_installs_tensorflow_and_nothing_optional(requirements, platform):
    installed = _names(requirements, PLATFORMS[platform])
    assert installed == {"keras", "tensorflow", "numpy"}
    with_tfds = _names(requirements, PLATFORMS[platform], extra="tfds")
    assert with_tfds - installed == {"tensorflow-datasets", "importlib-resources"}
    assert "tensorflow-cpu" not in _names(requirements, PLATFORMS[platform], extra="test")


def test_optional_dependencies_only_in_their_extras(requirements, metadata):
    assert _extras_of(requirements, "tensorflow-datasets") == {"tfds", "test"}
    assert _extras_of(requirements, "importlib-resources") == {"tfds", "test"}
    assert _extras_of(requirements, "scipy") == {"mat", "test"}
    assert _extras_of(requirements, "torch") == {"torch"}  # the README's torch tier installs it, not `test`
    assert {"tfds", "mat", "tuning", "plots", "jax", "torch", "export", "test"} <= set(
        metadata.get_all("Provides-Extra")
    )


def test_wheel_ships_license_and_py_typed(wheel, metadata):
    names = wheel.namelist()
    assert "keras_capsules/py.typed" in names
    (license_file,) = [n for n in names if re.fullmatch(r"keras_capsules-[^/]+\.dist-info/licenses/LICENSE", n)]
    text = wheel.read(license_file).decode()
    assert "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text
    with open(os.path.join(ROOT, "LICENSE"), encoding="utf-8") as f:
        assert text == f.read()
    assert metadata["License-Expression"] == "Apache-2.0"


def test_wheel_version_is_the_pyproject_version(metadata):
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        (declared,) = re.findall(r'^version = "([^"]+)"$', f.read(), flags=re.M)
    assert metadata["Version"] == declared == "0.2.0"


def test_version_of_an_uninstalled_tree(monkeypatch):
    def not_installed(name):
        raise version.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(version.metadata, "version", not_installed)
    assert version._installed_version() == "0+unknown"


# ------------------------------------------------------------------- optional dependencies missing


@pytest.fixture
def without_tfds(monkeypatch, tmp_path):
    """``import tensorflow_datasets`` fails, no $KERAS_CAPSULES_DATA, an empty TFDS data dir."""
    monkeypatch.setitem(sys.modules, "tensorflow_datasets", None)
    monkeypatch.delenv("KERAS_CAPSULES_DATA", raising=False)
    monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path / "tfds"))


def test_tfds_download_without_tfds_names_the_extra(without_tfds, tmp_path):
    with pytest.raises(tfds_source.TfdsNotInstalled, match=re.escape('pip install "keras-capsules[tfds]"')) as caught:
        datasets.load_arrays("cifar10", "test", data_dir=str(tmp_path), download=True)
    assert isinstance(caught.value, ImportError) and "'cifar10'" in str(caught.value)


def test_offline_load_without_tfds_names_the_files_and_the_extra(without_tfds, tmp_path):
    with pytest.raises(FileNotFoundError) as caught:
        datasets.load_arrays("mnist", "test", data_dir=str(tmp_path))
    message = str(caught.value)
    assert (
        "images-idx3" in message
        and "labels-idx1" in message
        and str(tmp_path) in message
        and 'pip install "keras-capsules[tfds]"' in message
    )


def test_embedded_sample_needs_no_tfds(without_tfds):
    images, labels = datasets.load_arrays("mnist_sample", "test")
    # The sample is 10,000 MNIST test images split 8,000 / 2,000.
    assert images.shape == (2000, 28, 28, 1) and labels.shape == (2000,)
    assert set(np.unique(labels)) == set(range(10))


def test_mat_file_without_scipy_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.io", None)
    with pytest.raises(ImportError, match=re.escape('pip install "keras-capsules[mat]"')):
        formats.load_mat(b"", "test_32x32.mat")


def _stub_wheel(folder, name, version):
    """A wheel of an empty distribution ``name`` ``version`` (a stand-in for the real package: only its name and version matter to pip)."""
    stem = f"{name.replace('-', '_')}-{version}"
    path = os.path.join(folder, f"{stem}-py3-none-any.whl")
    files = {
        f"{stem}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{stem}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: keras-capsules-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{file},,\n" for file in files) + f"{stem}.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as archive:
        for file, text in {**files, f"{stem}.dist-info/RECORD": record}.items():
            archive.writestr(file, text)
    return path


@large
def test_installing_the_wheel_after_tensorflow_keeps_tensorflow(wheel, tmp_path):
    """The issue's sequence, offline, with stand-ins: ``pip install tensorflow==2.21.0`` into a fresh environment,
    then the wheel. pip must install keras-capsules and its other requirements only: no ``tensorflow-cpu``
    (which would overwrite the CUDA build's files) and no second ``tensorflow``."""
    stubs = tmp_path / "index"
    stubs.mkdir()
    for name, release in (
        ("tensorflow", "2.21.0"),
        ("tensorflow-cpu", "2.21.0"),
        ("keras", "3.15.1"),
        ("numpy", "2.3.0"),
    ):
        _stub_wheel(str(stubs), name, release)
    environment = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(environment)], check=True)
    python = str(environment / "bin" / "python")
    offline = ["--no-index", "--find-links", str(stubs), "--disable-pip-version-check", "--quiet"]
    subprocess.run([python, "-m", "pip", "install", *offline, "tensorflow==2.21.0"], check=True)
    report = tmp_path / "report.json"
    wheel_copy = tmp_path / os.path.basename(wheel.filename)
    shutil.copy(wheel.filename, wheel_copy)
    result = subprocess.run(
        [python, "-m", "pip", "install", *offline, "--dry-run", "--report", str(report), str(wheel_copy)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    planned = {canonicalize_name(item["metadata"]["name"]) for item in json.loads(report.read_text())["install"]}
    assert planned == {"keras-capsules", "keras", "numpy"}, planned
