"""The examples, at a tiny size: train_unet3d.py (torch_aclnn.nn modules; plain
torch + patch() + torch.compile), its PNG and its note without matplotlib,
and ddp_train.py under torchrun (2 gloo processes on 127.0.0.1), whose
gradients must equal one process on the same global batch."""
import importlib.util
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import torch_aclnn

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
TINY = ["--steps", "2", "--size", "8", "--batch", "2", "--channels", "4", "--timing-steps", "2"]


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _run(args, timeout=120):
    proc = subprocess.run([sys.executable, *args], cwd=ROOT, env=_env(), capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-4000:]}"
    return proc.stdout


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


def _grad_diff(out):
    m = re.search(r"max \|grad difference\| = ([0-9.e+-]+)", out)
    assert m, out
    return float(m.group(1))


def test_train_unet3d_modules(tmp_path):
    png = tmp_path / "loss.png"
    out = _run(["examples/train_unet3d.py", *TINY, "--plot", str(png)])
    assert _grad_diff(out) <= 1e-6
    assert "torch_aclnn.nn modules" in out
    assert re.search(r"step time \(median of 2\): torch_aclnn [0-9.]+ ms, plain PyTorch [0-9.]+ ms \([0-9.]+x; "
                     r"the ratio of each of the 2 interleaved rounds: [0-9.]+-[0-9.]+, middle half", out), out
    if importlib.util.find_spec("matplotlib") is not None:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    else:
        assert "matplotlib is not installed" in out and not png.exists()


def test_train_unet3d_patch_compile():
    out = _run(["examples/train_unet3d.py", *TINY[:-2], "--patch", "function", "--compile", "--backend", "aot_eager",
                "--plot", "", "--timing-steps", "0"])
    assert "step time" not in out
    assert _grad_diff(out) <= 1e-5
    m = re.search(r"routed to torch_aclnn: (\{.*\})", out)
    assert m, out
    routed = eval(m.group(1))
    per_step = {"interpolate": 2, "elu": 3, "selu": 1, "celu": 1, "smooth_l1_loss": 1, "max_unpool3d": 2}
    assert routed == {k: 2 * v for k, v in per_step.items()}  # 2 compiled steps


@pytest.mark.skipif(not torch_aclnn._patch.ROUTED_OPERATORS, reason="patch(level='dispatcher') needs torch >= 2.9")
def test_train_unet3d_patch_default_level():
    """--patch: patch() without a level, which here (torch >= 2.9) routes at the dispatcher level."""
    out = _run(["examples/train_unet3d.py", *TINY[:-2], "--patch", "--plot", "", "--timing-steps", "0"])
    assert "plain torch.nn + torch_aclnn.patch()" in out
    assert _grad_diff(out) <= 1e-5
    m = re.search(r"routed to torch_aclnn: (\{.*\})", out)
    assert m, out
    routed = eval(m.group(1))
    per_step = {"aten::elu": 5, "aten::elu_backward": 5, "aten::upsample_nearest3d": 1,
                "aten::upsample_nearest3d_backward": 1, "aten::_upsample_nearest_exact3d": 1,
                "aten::_upsample_nearest_exact3d_backward": 1, "aten::smooth_l1_loss": 1,
                "aten::smooth_l1_loss_backward": 1, "aten::max_unpool3d": 2}
    steps = int(re.search(r"(\d+) steps of", out).group(1))
    assert routed == {k: steps * v for k, v in per_step.items()}, routed


def test_plot_without_matplotlib(tmp_path, monkeypatch, capsys):
    example = _load("train_unet3d")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    example.write_plot([1.0, 0.5], str(tmp_path / "x.png"), "t")
    assert "matplotlib is not installed" in capsys.readouterr().out
    assert not (tmp_path / "x.png").exists()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ddp_gradients_equal_single_process(tmp_path):
    dump = tmp_path / "grads.pt"
    args = ["-m", "torch.distributed.run", "--nnodes", "1", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
            "--master-port", str(_free_port()), "examples/ddp_train.py", "--steps", "1", "--size", "8",
            "--batch", "4", "--channels", "4", "--dump-grads", str(dump)]
    out = _run(args)
    assert "DDP (gloo) x 2 processes" in out
    saved = torch.load(dump)
    assert saved["world"] == 2
    example = _load("train_unet3d")
    batch = example.make_batch(0, 4, 8, 0)
    for layers, loss in [(example.layers_namespace(True), example.loss_module(True)),
                         (torch.nn, example.loss_module(False))]:
        single = example.UNet3d(layers, 4)
        single.load_state_dict(saved["initial"])
        _, grads = example.gradients(single, loss, batch)
        assert grads.keys() == saved["grads"].keys()
        for name, g in grads.items():
            # The same sums in another order: equal up to float32 rounding.
            torch.testing.assert_close(saved["grads"][name], g, rtol=1e-4, atol=1e-5, msg=name)
