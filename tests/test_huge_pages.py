"""The CPU kernels ask Linux for transparent huge pages on the outputs they
allocate that glibc maps afresh, from 32 MiB up (csrc/cpu/cpu_utils.h,
with_huge_pages): checked in the VmFlags ("hg" = MADV_HUGEPAGE) of the mapping
that holds each output, and switched off by TORCH_ACLNN_HUGE_PAGES=0. Smaller
outputs, which a training loop gets from glibc's heap, are left alone."""
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
        "max_unpool3d": lambda: ops.max_unpool3d(pooled, idx, [32, 64, 64], [2, 2, 2], [0, 0, 0]),
        # a 1x1x1 "pooling": grad_input (the pooled input's shape) is 32 MiB
        "max_unpool3d_backward": lambda: ops.max_unpool3d_backward(v2, v2, same, [32, 64, 64], [1, 1, 1], [0, 0, 0]),
    }


def _pmd_size():
    with open(PMD) as f:
        return int(f.read())


def _vm_flags(address):
    """The VmFlags of the mapping of this process that holds `address`."""
    with open("/proc/self/smaps") as f:
        inside = False
        for line in f:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(v, 16) for v in head.split("-"))
                inside = lo <= address < hi
            elif inside and head == "VmFlags:":
                return line.split()[1:]
    raise AssertionError(f"no mapping holds {address:#x}")


def _huge_page_inside(t):
    """An address in the first whole huge page inside t's storage."""
    page = _pmd_size()
    start = t.untyped_storage().data_ptr()
    first = (start + page - 1) // page * page
    assert first + page <= start + t.untyped_storage().nbytes()
    return first


@pytest.mark.skipif(os.environ.get("TORCH_ACLNN_HUGE_PAGES") == "0", reason="switched off by TORCH_ACLNN_HUGE_PAGES=0")
@pytest.mark.parametrize("name", list(_outputs()))
def test_large_cpu_outputs_are_advised_huge_pages(name):
    out = _outputs()[name]()
    assert out.untyped_storage().nbytes() >= 32 * 2**20
    assert "hg" in _vm_flags(_huge_page_inside(out)), name


def test_outputs_from_the_heap_are_left_alone():
    """A 16 MiB output, after a 16 MiB chunk has been freed: glibc serves it
    from its heap (its mmap threshold has risen to that size), where the
    advice would only split the mapping and make faults compact memory. (In
    a fresh process: in this one, an earlier output of 32 MiB or more may
    have come from a large free chunk of the heap, and been advised there.)"""
    code = (
        "import torch, torch_aclnn, tests.test_huge_pages as t\n"
        "x = torch.randn(t.N // 2)\n"
        "del x  # (raises glibc's mmap threshold to 16 MiB)\n"
        "out = torch.ops.torch_aclnn.elu(torch.randn(t.N // 2), 1.0, 1.0, 1.0)\n"
        "print('hg' in t._vm_flags(t._huge_page_inside(out)))\n"
    )
    assert _run(code, TORCH_ACLNN_HUGE_PAGES="1") == "False"


def test_out_tensors_are_left_alone():
    # The caller's out= tensor is theirs: no advice on it. (64 MiB: glibc
    # always maps so large an allocation afresh, never from a heap an earlier
    # output's advice may have touched.)
    x = torch.randn(16 * N)
    out = torch.empty(16 * N)
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
