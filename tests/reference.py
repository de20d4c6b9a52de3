"""Pure-torch float64 references of the spec (docs/spec.md) for all
ten operators, in one place for the property-based and adversarial tests.

They are written from the spec's formulas and index rules, independently of
the C++ kernels and of aten's implementations of these operators, and always
compute in float64. They live with their families' OpInfos in
``torch_aclnn/testing/<family>.py`` (the generic tests and the check report
use them too); this module only re-exports them, so there is one copy.

``REFERENCES`` maps each operator name (``torch.ops.torch_aclnn.<name>``) to
its reference, called with the operator's own positional arguments.
"""
from torch_aclnn.testing import OPS
from torch_aclnn.testing import elu as _elu
from torch_aclnn.testing import max_unpool as _max_unpool
from torch_aclnn.testing import smooth_l1 as _smooth_l1
from torch_aclnn.testing import upsample as _upsample

# upsample_nearest3d / upsample_nearest_exact3d and their backwards (§1, §2):
# mode is _upsample.NEAREST or _upsample.EXACT.
upsample_source_indices = _upsample.source_indices
upsample_forward = _upsample.reference_forward
upsample_backward = _upsample.reference_backward

# elu / elu_backward (§3)
elu_forward = _elu.reference_forward
elu_backward = _elu.reference_backward

# smooth_l1_loss / smooth_l1_loss_backward (§4)
smooth_l1_forward = _smooth_l1.reference_forward
smooth_l1_backward = _smooth_l1.reference_backward

# max_unpool3d / max_unpool3d_backward (§5)
max_unpool3d_forward = _max_unpool.reference_forward
max_unpool3d_backward = _max_unpool.reference_backward

REFERENCES = {name: info.reference for name, info in OPS.items()}

__all__ = [
    "REFERENCES", "upsample_source_indices", "upsample_forward", "upsample_backward", "elu_forward",
    "elu_backward", "smooth_l1_forward", "smooth_l1_backward", "max_unpool3d_forward", "max_unpool3d_backward",
]
