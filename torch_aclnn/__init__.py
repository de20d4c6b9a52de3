"""torch_aclnn: Huawei CANN aclnn backward operators (and their forwards) as
PyTorch custom ops with CPU, CUDA and Ascend NPU kernels.

Every operator is ``torch.ops.torch_aclnn.<name>``; the functions below are
thin typed wrappers with F.interpolate / F.elu / ... style arguments.

Drop-in use: ``torch_aclnn.nn.functional`` has torch.nn.functional's
interpolate, elu, selu, celu, smooth_l1_loss, huber_loss, max_unpool3d,
max_pool3d, leaky_relu, avg_pool3d and adaptive_avg_pool3d with their exact signatures (every other name is torch's own);
``torch_aclnn.nn`` the matching modules, swapped into a model by
``torch_aclnn.convert`` (and back by ``unconvert``);
``torch_aclnn.patch()`` (or ``with torch_aclnn.patched():``) routes such
calls of unmodified code (docs/patch.md: which, at each level). Each computes
a call with torch_aclnn when it lies inside the operator's contract, and hands
any other call to torch.
"""
# torch_npu, where it is installed, before torch (see _npu_import.py).
from . import _npu_import

_npu_import.import_before_torch()

from . import _loader  # noqa: E402

_loader.load()

from .ops._errors import quiet_contract_error_logs  # noqa: E402
from .ops.elu import celu, elu, elu_backward, selu  # noqa: E402
from .ops.leaky_relu import leaky_relu, leaky_relu_backward  # noqa: E402
from .ops.smooth_l1 import huber_loss, smooth_l1_loss, smooth_l1_loss_backward  # noqa: E402
from .ops.max_unpool import max_unpool3d, max_unpool3d_backward  # noqa: E402
from .ops.max_pool import max_pool3d, max_pool3d_with_indices, max_pool3d_with_indices_backward  # noqa: E402
from .ops.avg_pool import avg_pool3d, avg_pool3d_backward  # noqa: E402
from .ops.adaptive_avg_pool import adaptive_avg_pool3d, adaptive_avg_pool3d_backward  # noqa: E402
from .ops.upsample import (  # noqa: E402
    upsample_nearest3d,
    upsample_nearest3d_backward,
    upsample_nearest_exact3d,
    upsample_nearest_exact3d_backward,
)
from .ops.upsample_trilinear import upsample_trilinear3d, upsample_trilinear3d_backward  # noqa: E402

# The PrivateUse1 (Ascend NPU) kernels; imports torch_npu defensively.
from . import npu  # noqa: E402,F401

from . import _autocast  # noqa: E402

_autocast.register()
quiet_contract_error_logs()

from ._index_checks import check_index_errors, set_sync_index_checks  # noqa: E402
from . import _index_checks  # noqa: E402
_index_checks.init()
from . import _dropin  # noqa: E402

_dropin.refresh_devices()

from . import nn  # noqa: E402,F401
from .nn import convert, unconvert  # noqa: E402
from ._patch import (  # noqa: E402
    PatchStats,
    default_patch_level,
    is_patched,
    patch,
    patch_stats,
    patched,
    reset_patch_stats,
    unpatch,
)

__version__ = "0.1.0"

__all__ = [
    "check_index_errors",
    "convert",
    "unconvert",
    "set_sync_index_checks",
    "PatchStats",
    "default_patch_level",
    "is_patched",
    "nn",
    "patch",
    "patch_stats",
    "patched",
    "reset_patch_stats",
    "unpatch",
    "celu",
    "elu",
    "elu_backward",
    "selu",
    "huber_loss",
    "smooth_l1_loss",
    "smooth_l1_loss_backward",
    "max_unpool3d",
    "max_unpool3d_backward",
    "max_pool3d",
    "max_pool3d_with_indices",
    "max_pool3d_with_indices_backward",
    "avg_pool3d",
    "avg_pool3d_backward",
    "adaptive_avg_pool3d",
    "adaptive_avg_pool3d_backward",
    "upsample_nearest3d",
    "upsample_nearest3d_backward",
    "upsample_nearest_exact3d",
    "upsample_nearest_exact3d_backward",
    "leaky_relu",
    "leaky_relu_backward",
    "upsample_trilinear3d",
    "upsample_trilinear3d_backward",
]
