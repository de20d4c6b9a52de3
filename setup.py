"""Build torch_aclnn's C++ (and, where available, CUDA) extension.

Extensions built:
  torch_aclnn._C            every schema (TORCH_LIBRARY), the Meta kernels, the
                            CUDA kernels when built with CUDA.
  torch_aclnn._cpu_<isa>    the CPU kernels, compiled once per instruction set
                            (default, avx2, avx512 on x86-64). The loader imports
                            exactly one: the one matching
                            torch.backends.cpu.get_cpu_capability(), so our
                            at::vec code runs the same ISA as aten's kernels.

Environment switches:
  FORCE_CUDA=1            build the CUDA kernels even when no GPU is visible
  TORCH_ACLNN_NO_CUDA=1   never build the CUDA kernels
  TORCH_ACLNN_ASAN=1      build with -fsanitize=address,undefined (make asan)
  TORCH_ACLNN_PACKAGE_ONLY=1  no extension at all: the Python package alone (make's editable
                          install, made once; `make build` then compiles the extensions in place)
  TORCH_ACLNN_CPU_ISAS    comma list of ISA variants to build (default: all for the arch);
                          "aten" is the one aten picks on this machine, which the loader
                          imports here (a third of the compile time: make asan, compat, gpu-check)
"""
import glob
import json
import os
import platform

from setuptools import find_packages, setup
from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CppExtension, CUDAExtension
import torch

ROOT = os.path.dirname(os.path.abspath(__file__))
CSRC = os.path.join("csrc")


def _env(name):
    return os.environ.get(name, "") not in ("", "0")


def _want_cuda():
    if _env("TORCH_ACLNN_NO_CUDA"):
        return False
    if _env("FORCE_CUDA"):
        return True
    return torch.version.cuda is not None and CUDA_HOME is not None


# Per instruction set: (compile flags, CPU_CAPABILITY name as aten spells it).
_ISAS = {
    "default": ([], "DEFAULT"),
    "avx2": (["-mavx2", "-mfma", "-mf16c"], "AVX2"),
    "avx512": (["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mfma", "-mf16c"], "AVX512"),
}


def _isas():
    wanted = os.environ.get("TORCH_ACLNN_CPU_ISAS")
    if wanted:
        aten = torch.backends.cpu.get_cpu_capability()
        picked = next((name for name, (_, cap) in _ISAS.items() if cap == aten), "default")
        return list(dict.fromkeys(picked if w.strip() == "aten" else w.strip() for w in wanted.split(",") if w.strip()))
    if platform.machine().lower() in ("x86_64", "amd64"):
        return ["default", "avx2", "avx512"]
    return ["default"]


def _libstdcxx():
    """The shared C++ runtime this process (torch) has loaded, as a linker
    input: its path, or -lstdc++ where it cannot be found."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1]
                if os.path.basename(path).startswith("libstdc++.so") and os.path.isfile(path):
                    return path
    except OSError:
        pass
    return "-lstdc++"


def cxx_runtime_flags():
    """Linker flags that link the C++ runtime as a shared library (Linux)."""
    if platform.system() != "Linux":
        return []
    # Link the C++ runtime as a shared library even where the compiler
    # driver is set up to link it statically (some CUDA images wrap g++
    # with -static-libstdc++). An extension with a private copy of
    # libstdc++ throws its exceptions (TORCH_CHECK_VALUE & co. throw from
    # our code, not from libc10) through another C++ runtime than the one
    # torch catches them with: seen to segfault or abort the process
    # instead of raising ValueError. A driver whose own library directory
    # holds only libstdc++.a (one such image's g++ wrapper) links that
    # archive even for -Bdynamic -lstdc++, so the library linked is the
    # very libstdc++.so.6 torch runs with, by path (recorded by its
    # soname). tests/test_build.py checks the result.
    return ["-Wl,--push-state,-Bdynamic,--no-as-needed", _libstdcxx(), "-Wl,--pop-state"]


def one_unit(name, sources):
    """build/units/<name>: a unit that includes `sources`, so that files which
    each parse the same torch headers compile as one (written only when its
    text changes, so that ninja rebuilds it only when a source does)."""
    path = os.path.join("build", "units", name)
    text = "// Written by setup.py (one_unit): these files compiled as one unit.\n" + "".join(
        f'#include "{os.path.relpath(src, CSRC)}"\n' for src in sources)
    try:
        with open(path) as f:
            if f.read() == text:
                return path
    except OSError:
        pass
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def extensions():
    if _env("TORCH_ACLNN_PACKAGE_ONLY"):
        return []
    use_cuda = _want_cuda()
    debug = _env("DEBUG")
    # -g0: Python's own CFLAGS (which setuptools passes first) ask for debug
    # info: a large share of the compile time, and no change to the code
    # generated. DEBUG=1 and the sanitizer build keep it.
    opt = ["-O0", "-g"] if debug else ["-O3", "-g0"]
    # C++20: recent torch headers need it, and every torch >= 2.6 accepts it.
    cxx = ["-std=c++20", "-fopenmp", "-fvisibility=hidden", "-Wall", "-Wno-unused-function"] + opt
    ldflags = ["-fopenmp"] + cxx_runtime_flags()
    if _env("TORCH_ACLNN_ASAN"):
        cxx += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-O1", "-g"]
        ldflags += ["-fsanitize=address,undefined"]

    # csrc/compat: stand-ins for headers torch's own headers include but its
    # wheels do not ship (see there).
    include_dirs = [os.path.join(ROOT, CSRC), os.path.join(ROOT, CSRC, "compat")]
    # csrc/autograd/<family>.cpp (the families' formulas) compile as one unit:
    # each is a few dozen lines under the same torch headers.
    formulas = [src for src in sorted(glob.glob(f"{CSRC}/autograd/*.cpp")) if not src.endswith("/kernel.cpp")]
    core_sources = [src for folder in ("", "common/", "aten_routes/") for src in sorted(glob.glob(f"{CSRC}/{folder}*.cpp"))]
    core_sources += [f"{CSRC}/autograd/kernel.cpp", one_unit("autograd_formulas.cpp", formulas)]
    exts = []
    if use_cuda:
        nvcc = ["-O3", "-std=c++20", "--expt-relaxed-constexpr", "-lineinfo"]
        exts.append(
            CUDAExtension(
                "torch_aclnn._C",
                core_sources + sorted(glob.glob(f"{CSRC}/cuda/*.cu")),
                include_dirs=include_dirs,
                extra_compile_args={"cxx": cxx + ["-DTORCH_ACLNN_WITH_CUDA"], "nvcc": nvcc},
                extra_link_args=ldflags,
                py_limited_api=False,
            )
        )
    else:
        exts.append(
            CppExtension(
                "torch_aclnn._C",
                core_sources,
                include_dirs=include_dirs,
                extra_compile_args={"cxx": cxx},
                extra_link_args=ldflags,
            )
        )
    cpu_sources = sorted(glob.glob(f"{CSRC}/cpu/*.cpp"))
    # -ffp-contract=off: GCC's default for GNU C++ (fast) fuses a * b + c into
    # one FMA, also across at::vec intrinsics, where the ISA has FMA (the avx2
    # and avx512 variants: -mfma) but not in the default variant, so the same
    # source would round differently per variant. Off, every variant does the
    # same IEEE operations per element, which smooth_l1's reductions rely on
    # for their same-bits-in-every-variant sums. (No CPU kernel had a fused
    # operation before this flag: objdump finds no vfmadd/vfmsub/vfnmadd in
    # any variant; explicit fmadd intrinsics are unaffected by the flag.)
    cpu_cxx = cxx + ["-ffp-contract=off"]
    for isa in _isas():
        flags, capability = _ISAS[isa]
        defines = [f"-DCPU_CAPABILITY={capability}", f"-DCPU_CAPABILITY_{capability}",
                   f"-DTORCH_ACLNN_ISA_MODULE=_cpu_{isa}"]
        exts.append(
            CppExtension(
                f"torch_aclnn._cpu_{isa}",
                cpu_sources,
                include_dirs=include_dirs,
                extra_compile_args={"cxx": cpu_cxx + flags + defines},
                extra_link_args=ldflags,
            )
        )
    return exts


BUILD_INFO = "_build_info.json"  # read by torch_aclnn/_loader.py before it loads any .so


class BuildWithInfo(BuildExtension.with_options(use_ninja=True)):
    """build_ext that also records, next to the modules it builds, the torch
    they were built against: a C++ extension loads only under that torch, and
    the loader says so instead of failing on an undefined symbol."""

    def build_extension(self, ext):
        # Each extension compiles in its own folder under build_temp: ninja's
        # build file, log and header dependencies are per folder, and one
        # folder shared by the four extensions forgot the others' objects, so a
        # build with nothing changed compiled them again.
        base = self.build_temp
        self.build_temp = os.path.join(base, ext.name.rsplit(".", 1)[-1])
        try:
            super().build_extension(ext)
        finally:
            self.build_temp = base

    def run(self):
        super().run()
        out = os.path.dirname(self.get_ext_fullpath("torch_aclnn._C"))
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, BUILD_INFO), "w") as f:
            json.dump({"torch": torch.__version__}, f)
            f.write("\n")


if __name__ == "__main__":  # (tests/test_build.py imports this file for cxx_runtime_flags)
    setup(
        name="torch_aclnn",
        packages=find_packages(include=["torch_aclnn", "torch_aclnn.*"]),
        package_data={"torch_aclnn": [BUILD_INFO]},
        ext_modules=extensions(),
        cmdclass={"build_ext": BuildWithInfo},
    )
