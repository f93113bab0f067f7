"""A PEP 517 build backend for `pip install .` of the fleetsim Python module, offline.

It drives CMake (the project's own build) for the interpreter pip runs it with, and writes the
wheel itself: it needs no setuptools, wheel or anything else from an index, so pip's isolated
build environment is enough. Build files go to build-python/<interpreter tag>/ in the source tree,
so a second install rebuilds only what changed. `pip install -e .` installs a wheel holding a .pth
file that points at that build directory (rebuild it there, or reinstall, after changing C++).
"""

import base64
import hashlib
import os
import re
import subprocess
import sys
import sysconfig
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(fleetsim VERSION ([0-9.]+)", f.read())
    return m.group(1) if m else "0.0.0"


def _tag():
    impl = "cp" if sys.implementation.name == "cpython" else sys.implementation.name[:2]
    py = f"{impl}{sys.version_info[0]}{sys.version_info[1]}"
    abi = py + ("d" if hasattr(sys, "gettotalrefcount") else "")
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return py, abi, plat


def _build_dir():
    py, abi, plat = _tag()
    return os.path.join(ROOT, "build-python", f"{abi}-{plat}")


def _build_module():
    """Configure and build the module for this interpreter; returns the path of the .so."""
    build = _build_dir()
    jobs = str(max(1, os.cpu_count() or 1))
    configure = [
        "cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
        "-DFLEETSIM_PYTHON=ON", "-DFLEETSIM_TESTS=OFF", "-DFLEETSIM_CUDA=" + os.environ.get("FLEETSIM_CUDA", "OFF"),
        "-DPython3_EXECUTABLE=" + sys.executable,
        # a few sources per compile, so the headers they share (fmt, json, yaml-cpp, the core) are
        # parsed once per batch: half the CPU time of a build from scratch, the same module
        "-DCMAKE_UNITY_BUILD=ON",
    ]
    if os.path.exists("/usr/bin/ninja"):
        configure += ["-G", "Ninja"]
    try:
        subprocess.run(configure, check=True, stdout=sys.stderr)
        subprocess.run(["cmake", "--build", build, "--target", "fleetsim_python", "--parallel", jobs], check=True,
                       stdout=sys.stderr)
    except FileNotFoundError:
        sys.exit("fleetsim: building the Python module needs cmake and a C++ compiler (scripts/install-deps.sh)")
    except subprocess.CalledProcessError as e:
        sys.exit(f"fleetsim: the CMake build of the Python module failed ({e}); see the output above")
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    so = os.path.join(build, "python", "fleetsim" + suffix)
    if not os.path.exists(so):
        sys.exit(f"fleetsim: the build did not produce {so}")
    return so


def _metadata():
    return (
        "Metadata-Version: 2.1\n"
        f"Name: fleetsim\nVersion: {_version()}\n"
        "Summary: Capacity, latency, utilization and cost of an LLM inference fleet\n"
        "Requires-Python: >=3.8\n"
    )


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}\n"


def _write_wheel(wheel_directory, files):
    """files: [(name in the wheel, bytes)]. Adds the dist-info and returns the wheel's file name."""
    py, abi, plat = _tag()
    tag = f"{py}-{abi}-{plat}"
    dist = f"fleetsim-{_version()}.dist-info"
    wheel_meta = f"Wheel-Version: 1.0\nGenerator: fleetsim_build\nRoot-Is-Purelib: false\nTag: {tag}\n"
    files = list(files) + [(f"{dist}/METADATA", _metadata().encode()), (f"{dist}/WHEEL", wheel_meta.encode())]
    record = "".join(_record_line(n, d) for n, d in files) + f"{dist}/RECORD,,\n"
    name = f"fleetsim-{_version()}-{tag}.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files + [(f"{dist}/RECORD", record.encode())]:
            z.writestr(n, d)
    return name


# --- PEP 517 / PEP 660 hooks ---------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist = f"fleetsim-{_version()}.dist-info"
    os.makedirs(os.path.join(metadata_directory, dist), exist_ok=True)
    with open(os.path.join(metadata_directory, dist, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    return dist


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    so = _build_module()
    with open(so, "rb") as f:
        data = f.read()
    return _write_wheel(wheel_directory, [(os.path.basename(so), data)])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    so = _build_module()
    pth = (os.path.dirname(so) + "\n").encode()
    return _write_wheel(wheel_directory, [("fleetsim_editable.pth", pth)])


def build_sdist(sdist_directory, config_settings=None):
    sys.exit("fleetsim: no source distribution; install from the repository with `pip install .`")
