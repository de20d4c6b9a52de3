"""The CPU kernels ask Linux for transparent huge pages on the outputs of
32 MiB or more whose memory is not yet written (csrc/cpu/cpu_utils.h,
with_huge_pages): checked in the VmFlags ("hg" = MADV_HUGEPAGE) of the mapping
that holds each output, and switched off by TORCH_ACLNN_HUGE_PAGES=0. Smaller
outputs and memory an allocator reuses are left alone."""
import functools
import os
import subprocess
import sys

import pytest
import torch

import torch_aclnn  # noqa: F401

ops = torch.ops.torch_aclnn
PMD = "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"

pytestmark = pytest.mark.skipif(not (sys.platform.startswith("linux") and os.path.exists(PMD)),
                                reason="needs Linux with transparent huge pages")

N = 8 * 2**20  # elements: a 32 MiB float32 output


def _outputs():
    x = torch.randn(N)
    v = torch.randn(2, 32, 16, 32, 32)  # upsampled x2: 32 MiB
    g = torch.randn(2, 8, 32, 64, 64)
    pooled = torch.randn(2, 32, 16, 32, 32)
    idx = torch.zeros(pooled.shape, dtype=torch.long)  # a 2x2x2 max pooling's indices
    idx += (torch.arange(16).view(16, 1, 1) * 2 * 64 * 64 + torch.arange(32).view(32, 1) * 2 * 64
            + torch.arange(32) * 2)
    v2 = torch.randn(2, 32, 32, 64, 64)
    same = torch.arange(32 * 64 * 64).view(1, 1, 32, 64, 64).expand(v2.shape).contiguous()
    return {
        "elu": lambda: ops.elu(x, 1.0, 1.0, 1.0),
        "elu_backward": lambda: ops.elu_backward(x, 1.0, 1.0, 1.0, False, x),
        "smooth_l1_loss": lambda: ops.smooth_l1_loss(x, x, 0, 1.0),
        "smooth_l1_loss_backward": lambda: ops.smooth_l1_loss_backward(x, x, x, 0, 1.0),
        "upsample_nearest3d": lambda: ops.upsample_nearest3d(v, [32, 64, 64], None, None, None),
        "upsample_nearest3d_backward":
            lambda: ops.upsample_nearest3d_backward(g, [32, 64, 64], [2, 8, 64, 128, 128], None, None, None),
        "upsample_nearest_exact3d": lambda: ops.upsample_nearest_exact3d(v, [32, 64, 64], None, None, None),
        "upsample_nearest_exact3d_backward":
            lambda: ops.upsample_nearest_exact3d_backward(g, [32, 64, 64], [2, 8, 64, 128, 128], None, None, None),
        "max_unpool3d": lambda: ops.max_unpool3d(pooled, idx, [32, 64, 64], [2, 2, 2], [0, 0, 0]),
        # a 1x1x1 "pooling": grad_input (the pooled input's shape) is 32 MiB
        "max_unpool3d_backward": lambda: ops.max_unpool3d_backward(v2, v2, same, [32, 64, 64], [1, 1, 1], [0, 0, 0]),
        # a 1x1x1 pooling: the values (and grad_input) have the input's 32 MiB
        "max_pool3d_with_indices": lambda: ops.max_pool3d_with_indices(v2, [1], [1], [0], [1], False)[0],
        "max_pool3d_with_indices_backward":
            lambda: ops.max_pool3d_with_indices_backward(v2, v2, same, [1], [1], [0], [1], False),
        "leaky_relu": lambda: ops.leaky_relu(x, 0.01),
        "leaky_relu_backward": lambda: ops.leaky_relu_backward(x, x, 0.01, False),
        "upsample_trilinear3d": lambda: ops.upsample_trilinear3d(v, [32, 64, 64], False, None, None, None),
        "upsample_trilinear3d_backward":
            lambda: ops.upsample_trilinear3d_backward(g, [32, 64, 64], [2, 8, 64, 128, 128], False, None, None, None),
        # 1x1x1 windows: the result has the input's 64 MiB
        "avg_pool3d": lambda: ops.avg_pool3d(v2, [1], [1], [0], False, True, None),
        "avg_pool3d_backward": lambda: ops.avg_pool3d_backward(v2, v2, [1], [1], [0], False, True, None),
        "adaptive_avg_pool3d": lambda: ops.adaptive_avg_pool3d(v2, [32, 64, 64]),
        "adaptive_avg_pool3d_backward": lambda: ops.adaptive_avg_pool3d_backward(v2, v2),
    }


def _pmd_size():
    with open(PMD) as f:
        return int(f.read())


def _mapping(address):
    """(pathname or "", VmFlags) of the mapping of this process that holds `address`."""
    with open("/proc/self/smaps") as f:
        inside, name = False, ""
        for line in f:
            fields = line.split()
            head = fields[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(v, 16) for v in head.split("-"))
                inside, name = lo <= address < hi, (fields[5] if len(fields) > 5 else "")
            elif inside and head == "VmFlags:":
                return name, fields[1:]
    raise AssertionError(f"no mapping holds {address:#x}")


def _vm_flags(address):
    """The VmFlags of the mapping of this process that holds `address`."""
    return _mapping(address)[1]


def _huge_page_inside(t):
    """An address in the first whole huge page inside t's storage."""
    page = _pmd_size()
    start = t.untyped_storage().data_ptr()
    first = (start + page - 1) // page * page
    assert first + page <= start + t.untyped_storage().nbytes()
    return first


@functools.lru_cache(maxsize=None)
def _advised_in_a_fresh_process() -> dict:
    """name -> (output bytes, advised?) for every output of _outputs(), each made
    in a fresh process: in a long-lived one (this test session) a large output
    may come from heap memory an earlier test wrote, which is rightly left
    alone."""
    code = (
        "import torch, torch_aclnn, tests.test_huge_pages as t\n"
        "for name, make in t._outputs().items():\n"
        "    out = make()\n"
        "    print(name, out.untyped_storage().nbytes(), 'hg' in t._vm_flags(t._huge_page_inside(out)))\n"
        "    del out\n"
    )
    lines = _run(code, TORCH_ACLNN_HUGE_PAGES="1").splitlines()
    return {name: (int(nbytes), advised == "True") for name, nbytes, advised in (line.split() for line in lines)}


@pytest.mark.parametrize("name", list(_outputs()))
def test_large_cpu_outputs_are_advised_huge_pages(name):
    nbytes, advised = _advised_in_a_fresh_process()[name]
    assert nbytes >= 32 * 2**20
    assert advised, name


def test_outputs_below_32_mib_are_left_alone():
    """Below 32 MiB (glibc's largest mmap threshold) a loop's outputs come from
    glibc's heap, where the advice would save few faults, split the mapping
    and make faults compact memory. (In a fresh process: in this one, a heap
    range an earlier large output was advised in may hold it.)"""
    code = (
        "import torch, torch_aclnn, tests.test_huge_pages as t\n"
        "out = torch.ops.torch_aclnn.elu(torch.randn(t.N // 2), 1.0, 1.0, 1.0)\n"
        "print('hg' in t._vm_flags(t._huge_page_inside(out)))\n"
    )
    assert _run(code, TORCH_ACLNN_HUGE_PAGES="1") == "False"


def test_reused_heap_memory_is_left_alone():
    """A 40 MiB output served from a free chunk inside glibc's heap (two
    written 31 MiB tensors freed next to each other) is memory already
    there: not advised, though it is large. (In a fresh process, whose heap
    no earlier test has touched.)"""
    code = (
        "import torch, torch_aclnn, tests.test_huge_pages as t\n"
        "MiB = 2 ** 20\n"
        "x = torch.randn(40 * MiB // 4)\n"
        "a = torch.empty(31 * MiB // 4)\n"
        "del a  # (raises glibc's mmap threshold to 31 MiB)\n"
        "b, c, keep = torch.randn(31 * MiB // 4), torch.randn(31 * MiB // 4), torch.randn(MiB // 4)\n"
        "del b, c  # (a written 62 MiB free chunk inside the heap)\n"
        "out = torch.ops.torch_aclnn.elu(x, 1.0, 1.0, 1.0)\n"
        "name, flags = t._mapping(t._huge_page_inside(out))\n"
        "print(name, 'hg' in flags)\n"
    )
    name, advised = _run(code, TORCH_ACLNN_HUGE_PAGES="1").split()
    if name != "[heap]":
        pytest.skip(f"this allocator did not serve the output from its heap ({name})")
    assert advised == "False"


def test_out_tensors_are_left_alone():
    # The caller's out= tensor is theirs: no advice on it. (64 MiB, of which
    # the first huge page is not yet written: it would be advised as a result.)
    x = torch.randn(16 * 2**20)
    out = torch.empty(16 * 2**20)
    assert "hg" not in _vm_flags(_huge_page_inside(out))
    ops.elu_backward.grad_input(x, 1.0, 1.0, 1.0, False, x, grad_input=out)
    assert "hg" not in _vm_flags(_huge_page_inside(out))


def _run(code: str, **env) -> str:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    run = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **env), cwd=root, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def test_switched_off_by_environment():
    code = (
        "import torch, torch_aclnn, tests.test_huge_pages as t\n"
        "out = torch.ops.torch_aclnn.elu(torch.randn(t.N), 1.0, 1.0, 1.0)\n"
        "print('hg' in t._vm_flags(t._huge_page_inside(out)))\n"
    )
    for value, expected in (("0", "False"), ("1", "True")):
        assert _run(code, TORCH_ACLNN_HUGE_PAGES=value) == expected, value
