"""keras_capsules.host: the CPU's name and flags from a hand-written /proc/cpuinfo, and without one."""

import platform

from keras_capsules import host

#: Two logical CPUs as Linux lists them: the first block's model name and flags are the machine's.
CPUINFO = (
    "processor\t: 0\n"
    "vendor_id\t: AuthenticAMD\n"
    "model\t\t: 1\n"
    "model name\t: AMD EPYC 7B13\n"
    "flags\t\t: fpu vme sse2 avx avx2 fma\n"
    "\n"
    "processor\t: 1\n"
    "model name\t: another name: never read\n"
    "flags\t\t: fpu avx512f\n"
)


def test_the_first_model_name_and_flags_are_read():
    assert host.cpu_name(CPUINFO) == "AMD EPYC 7B13"  # "model" alone is another field
    assert host.cpu_flags(CPUINFO) == ["fpu", "vme", "sse2", "avx", "avx2", "fma"]


def test_text_without_a_model_name_falls_back_to_the_platform(monkeypatch):
    monkeypatch.setattr(platform, "processor", lambda: "")
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    assert host.cpu_name("processor\t: 0\n") == "x86_64"
    assert host.cpu_flags("processor\t: 0\n") == []
    monkeypatch.setattr(platform, "processor", lambda: "i386")
    assert host.cpu_name("") == "i386"


def test_this_machine_is_read_from_proc_cpuinfo(tmp_path, monkeypatch):
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO)
    monkeypatch.setattr(host, "PROC_CPUINFO", str(path))
    assert host.cpuinfo() == CPUINFO
    assert (host.cpu_name(), host.cpu_flags()) == ("AMD EPYC 7B13", ["fpu", "vme", "sse2", "avx", "avx2", "fma"])


def test_no_cpuinfo_names_the_platform(tmp_path, monkeypatch):
    monkeypatch.setattr(host, "PROC_CPUINFO", str(tmp_path / "absent"))
    monkeypatch.setattr(platform, "processor", lambda: "")
    monkeypatch.setattr(platform, "machine", lambda: "arm64")
    assert host.cpuinfo() == ""
    assert (host.cpu_name(), host.cpu_flags()) == ("arm64", [])
