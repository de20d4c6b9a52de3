"""Smoke tests of the benchmark harness (python -m torch_aclnn bench).

They run the harness on tiny tensors and check the structure of what it
writes; speed is never asserted.
"""
import json

import pytest
import torch

import torch_aclnn
from torch_aclnn.harness import bench, bench_cases, bench_model
from torch_aclnn.__main__ import main

OP = "upsample_nearest_exact3d_backward"
ROW_KEYS = {"op", "case", "dtype", "form", "kind", "aten", "status", "note", "target"}
MEASURED_KEYS = {"ours_s", "aten_s", "ratio", "overhead", "spread_pct", "rounds", "met"}
THROUGHPUT_KEYS = {"bytes", "mix", "ours_gbps", "aten_gbps", "reference", "reference_gbps", "pct_of_reference",
                   "floor", "floor_s", "floors_s", "ratio_at_floor", "pct_of_reference_at_floor", "beyond_floor"}


def _run_script(name, *argv):
    """benchmarks/<name> run with argv in a fresh interpreter (skipped where benchmarks/ is not
    beside the tests: an installed package); asserts it exits 0 and returns its stdout."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / name
    if not script.exists():
        pytest.skip("benchmarks/ is not beside the tests (an installed package)")
    out = subprocess.run([sys.executable, str(script), *argv], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def _run(tmp_path, *argv):
    rc = main(["bench", "--tiny", "--out", str(tmp_path), *argv])
    assert rc == 0
    (js,) = tmp_path.glob("*-tiny.json")
    (md,) = tmp_path.glob("*-tiny.md")
    return json.loads(js.read_text()), md.read_text()


def test_one_op_tiny(tmp_path, capsys):
    report, md = _run(tmp_path, "--op", OP, "--dtype", "float32")
    assert set(report) == {"meta", "cases"}
    meta = report["meta"]
    assert meta["size"] == "tiny" and meta["threads"] >= 1 and meta["torch"] == torch.__version__
    rows = report["cases"]
    expected = [c for c in bench_cases.all_cases() if c.op == OP and c.dtype == torch.float32]
    assert len(rows) == len(expected) and {r["kind"] for r in rows} == {"throughput", "overhead"}
    for r in rows:
        assert r["op"] == OP and r["dtype"] == "float32"
        assert r["status"] == "ok", r["note"]
        assert ROW_KEYS | MEASURED_KEYS <= set(r)
        assert r["ours_s"] > 0 and r["aten_s"] > 0 and r["ratio"] > 0
        assert all(len(v) == meta["rounds"] for v in r["rounds"].values())
        if r["kind"] == "throughput":
            assert THROUGHPUT_KEYS <= set(r)
            assert r["mix"] == "1R+1W" and r["reference"] == "copy_"
            assert r["floor"] == "traffic" and set(r["floors_s"]) == {"traffic"} and r["floor_s"] > 0
            assert r["ratio_at_floor"] == pytest.approx(r["aten_s"] / r["floor_s"])
            assert r["form"] in ("functional", "out=")
        assert r["note"] == "", r["note"]  # same results as aten
    # the markdown table: one line per measured case, under the two headers
    lines = md.splitlines()
    assert any(line.startswith("| operator | case | dtype | form | aten ms | ours ms | ratio | spread") and
               "| floor ms | at floor |" in line for line in lines)
    assert any(line.startswith("| operator | case | aten call | aten µs | ours µs | ratio |") for line in lines)
    ovh = [r for r in rows if r["kind"] == "overhead"]
    assert any(f"| {r['ratio']:.2f} |" in line for r in ovh for line in lines if line.startswith(f"| {OP} |"))
    assert sum(line.startswith(f"| {OP} |") for line in lines) == len(rows)
    out = capsys.readouterr().out
    assert "### Throughput" in out and "json:" in out and "chart:" in out
    png = list(tmp_path.glob("*-tiny.png"))
    try:
        import matplotlib  # noqa: F401
        assert len(png) == 1 and png[0].stat().st_size > 0
    except ImportError:
        assert not png and "matplotlib is not installed" in out


def test_missing_kernel_is_skipped_with_a_note(tmp_path, capsys, monkeypatch):
    real = bench._missing_kernel
    monkeypatch.setattr(bench, "_missing_kernel",
                        lambda c, device="cpu": f"{c.qualname} has no CPU kernel in this build" if c.op == OP
                        else real(c, device))
    report, md = _run(tmp_path, "--op", OP, "--dtype", "float32")
    assert report["cases"] and all(r["status"] == "skipped" for r in report["cases"])
    assert f"- {OP}: skipped" in md
    assert f"note: skipping {OP}" in capsys.readouterr().err


def test_every_case_names_a_known_operator():
    cases = bench_cases.all_cases()
    assert {c.op for c in cases} == set(bench_cases.OPERATORS)
    for c in cases:
        assert c.form in ("functional", "out=") and c.kind in ("throughput", "overhead")
        assert (c.overload == "grad_input") == (c.form == "out=")
    # every operator has a 1-element (overhead) case
    assert {c.op for c in cases if c.kind == "overhead"} == set(bench_cases.OPERATORS)


def test_elu_backward_has_an_exp_floor(tmp_path):
    report, _ = _run(tmp_path, "--op", "elu_backward", "--dtype", "bfloat16")
    rows = [r for r in report["cases"] if r["kind"] == "throughput"]
    assert rows and all(set(r["floors_s"]) == {"traffic", "exp"} for r in rows)
    for r in rows:
        assert r["floor_s"] == max(r["floors_s"].values()) and r["floor"] in r["floors_s"]


def _row(ratio, pct, at_floor, pct_at_floor, target=(3.0, 70.0)):
    row = {"kind": "throughput", "target": {"ratio": target[0], "pct_of_reference": target[1], "overhead": None},
           "ratio": ratio, "pct_of_reference": pct, "floor_s": 1e-3, "ratio_at_floor": at_floor,
           "pct_of_reference_at_floor": pct_at_floor}
    row["met"] = bench._met(row)
    return row


@pytest.mark.parametrize("ratio, pct, at_floor, pct_at_floor, expected", [
    (3.5, 90.0, 4.0, 95.0, None),   # met: nothing to say
    (2.5, 90.0, 2.4, 95.0, True),   # misses the ratio, which even a kernel at the floor would miss
    (2.5, 90.0, 3.2, 95.0, False),  # misses a ratio the floor allows
    (2.5, 60.0, 2.4, 65.0, True),   # misses both, both beyond the floor
    (2.5, 60.0, 2.4, 95.0, False),  # the % of reference was reachable
    (3.5, 60.0, 4.0, 65.0, True),   # misses only the %, beyond the floor
])
def test_beyond_floor(ratio, pct, at_floor, pct_at_floor, expected):
    row = _row(ratio, pct, at_floor, pct_at_floor)
    assert bench._beyond_floor(row) is expected
    row["beyond_floor"] = expected
    assert bench._met_cell(row) == {None: "yes", True: "**no** (beyond floor)", False: "**no**"}[expected]


def test_bad_selection(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--op", "no_such_op"])


def test_cuda_targets_follow_the_cuda_issue():
    by = {(c.op, c.name, c.form, c.dtype): bench_cases.targets(c, "cuda") for c in bench_cases.all_cases()}
    f32, bf16 = torch.float32, torch.bfloat16
    assert by[("upsample_nearest3d_backward", "scale 2 NCDHW", "functional", f32)] == (1.5, 70.0, None)
    assert by[("upsample_nearest_exact3d_backward", "scale 1.5 NCDHW", "out=", bf16)] == (1.0, 70.0, None)
    assert by[("upsample_nearest3d_backward", "scale 0.5 NCDHW", "functional", f32)] == (1.0, 70.0, None)
    assert by[("max_unpool3d_backward", "2x2x2 pooling", "functional", bf16)] == (1.0, 70.0, None)
    assert by[("elu_backward", "is_result=False", "out=", f32)] == (1.0, 80.0, None)
    assert by[("smooth_l1_loss_backward", "none", "functional", f32)] == (1.0, 80.0, None)
    assert by[("leaky_relu_backward", "self_is_result=False", "out=", bf16)] == (1.0, 80.0, None)
    assert by[("smooth_l1_loss_backward", "mean", "functional", f32)] == (1.0, None, None)
    # every forward at least as fast as aten's
    assert by[("max_unpool3d", "2x2x2 pooling", "functional", f32)] == (1.0, None, None)
    assert by[("upsample_nearest3d", "scale 2 channels_last_3d", "functional", f32)] == (1.0, None, None)
    assert by[("elu", "alpha=1", "functional", f32)] == (1.0, None, None)
    # 1-element calls: the CPU's limits
    assert by[("elu", "1 element, autograd on", "functional", f32)] == (None, None, 1.2)
    assert by[("max_unpool3d_backward", "1 element", "functional", f32)] == (None, None, 1.5)
    # on CPU a case keeps its own targets
    c = next(c for c in bench_cases.all_cases() if c.op == "elu_backward")
    assert bench_cases.targets(c, "cpu") == (c.target_ratio, c.target_pct, c.target_overhead)


def test_cuda_cases_move_past_the_l2(monkeypatch):
    """At the "large" sizes (`bench --device cuda`), every throughput case
    moves at least 128 MB, in bfloat16 too: past an H200's 60 MB L2. Built on
    the meta device (shapes only); the exp floor's boolean mask needs data."""
    monkeypatch.setattr(bench_cases, "_exp_floor", lambda x: ("exp", lambda: None))
    cases = [c for c in bench_cases.all_cases() if c.kind == "throughput"]
    assert {c.op for c in cases} == set(bench_cases.OPERATORS)
    small = []
    for c in cases:
        with torch.device("meta"):
            setup = c.build("large")
            moved = sum(bench._nbytes(t) for t in setup.reads) + bench._nbytes(setup.ours())
        if moved < bench_cases.LARGE_MIN_BYTES:
            small.append((c.op, c.name, str(c.dtype), c.form, moved // 2**20))
    assert not small, small
    assert bench_cases.LARGE_MIN_BYTES >= 128 * 2**20


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message when no GPU is visible")
def test_cuda_without_a_gpu(capsys):
    assert main(["bench", "--tiny", "--device", "cuda", "--op", OP]) == 2
    assert "no CUDA device" in capsys.readouterr().err


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_one_op_tiny_cuda(tmp_path):
    rc = main(["bench", "--tiny", "--device", "cuda", "--out", str(tmp_path), "--op", OP, "--dtype", "float32"])
    assert rc == 0
    (js,) = tmp_path.glob("*-cuda-tiny.json")
    report = json.loads(js.read_text())
    assert report["meta"]["device"] == "cuda" and report["meta"]["gpu"]
    assert report["cases"] and all(r["status"] == "ok" and r["note"] == "" for r in report["cases"])


def test_model_tiny(tmp_path):
    """bench --model unet3d: every mode timed, the determinism row, the files."""
    rc = main(["bench", "--model", "unet3d", "--tiny", "--out", str(tmp_path)])
    assert rc == 0
    (js,) = tmp_path.glob("*-model-cpu-tiny.json")
    report = json.loads(js.read_text())
    assert {r["mode"] for r in report["steps"]} == set(bench_model._modes()) >= {
        "torch", "patch(function)", "convert()", "torch, compile", "patch(function), compile"}
    assert all(r["ms_per_step"] > 0 for r in report["steps"])
    assert report["meta"]["patch_default_level"] == torch_aclnn.default_patch_level()
    det = report["determinism"]
    assert det["torch"].startswith("raises: max_unpooling3d")
    assert det["patch(function)"] == "bitwise equal"
    assert set(det["routed_per_step"]["patch(function)"]) == {"interpolate", "elu", "selu", "celu",
                                                              "smooth_l1_loss", "max_unpool3d"}
    text = (tmp_path / js.name.replace(".json", ".md")).read_text()
    assert text.startswith("# UNet3d training step")
    assert f"`patch()` without a level is `patch({torch_aclnn.default_patch_level()})` here" in text
    if "patch(dispatcher)" in bench_model._modes():  # (torch >= 2.9)
        assert det["patch(dispatcher)"] == "bitwise equal"
        assert set(det["routed_per_step"]["patch(dispatcher)"]) == {
            "aten::elu", "aten::elu_backward", "aten::upsample_nearest3d", "aten::upsample_nearest3d_backward",
            "aten::_upsample_nearest_exact3d", "aten::_upsample_nearest_exact3d_backward", "aten::smooth_l1_loss",
            "aten::smooth_l1_loss_backward", "aten::max_unpool3d"}


def test_mode_cost_script_runs():
    """benchmarks/mode_cost.py (the host's share of a step) runs and reports its modes."""
    stdout = _run_script("mode_cost.py", "--rounds", "1", "--steps", "1")
    rows = [line.split()[0] for line in stdout.splitlines() if "us/step" in line]
    assert rows == [m for m in ("torch", "empty", "patch(dispatcher)", "patch(function)", "convert()")
                    if m in bench_model._modes() or m == "empty"], stdout
    assert "torch calls per step reach a mode" in stdout and "inside the empty mode" in stdout
    taxed = [line.split(":")[0].strip() for line in stdout.splitlines() if "level's mode" in line]
    assert taxed == ["one call, plain / inside the empty mode / inside the function level's mode", "x.shape",
                     "p.grad", "torch.add"], stdout


def test_entry_cost_script_runs():
    """benchmarks/entry_cost.py (a 1-element call's entry, recording and backward) runs and reports both
    libraries, and the dispatcher level's routes off and on."""
    stdout = _run_script("entry_cost.py", "--rounds", "1")
    times = [line.split()[0] for line in stdout.splitlines() if line.strip().endswith(" us")]
    assert times == (["torch.ops.torch_aclnn.elu", "elu", "torch.ops.aten.elu", "F.elu"] * 2
                     + ["torch_aclnn", "aten"]
                     + ["elu:", "interpolate:", "smooth_l1_loss:", "max_unpool3d:"]), stdout
    if "patch(dispatcher)" in bench_model._modes():  # (torch >= 2.9) F's calls with the routes off and on
        routes = [line.split()[0] for line in stdout.splitlines() if line.strip().endswith("x)")]
        assert routes == ["elu:", "interpolate:", "smooth_l1_loss:", "max_unpool3d:"], stdout


def test_max_pool_shapes_script_runs():
    """benchmarks/max_pool_shapes.py (max_pool3d forward and backward at a model's shapes) runs and times every
    shape on both sides."""
    stdout = _run_script("max_pool_shapes.py", "--rounds", "1", "--min-run-time", "0.01")
    rows = [line for line in stdout.splitlines() if "forward+backward" in line]
    assert len(rows) == 8 and all(float(row.split()[-1]) > 0 for row in rows), stdout


def test_huge_pages_script_runs():
    """benchmarks/huge_pages.py (the huge-page advice in a loop and on a fresh output) runs and reports both parts."""
    stdout = _run_script("huge_pages.py", "--steps", "2")
    assert "loop: mappings [" in stdout and stdout.count("a fresh 128 MiB result") == 2, stdout


def test_ncu_cases_script_runs():
    """benchmarks/ncu_cases.py (the calls gpu-check's ncu step profiles) finds every case it names and makes
    each call on both sides (on the CPU, without the profiler)."""
    stdout = _run_script("ncu_cases.py", "--device", "cpu")
    rows = [line for line in stdout.splitlines() if line.startswith("profiled: ")]
    assert len(rows) == 2 * 10 and rows[0].endswith("/ torch_aclnn") and rows[1].endswith("/ aten"), stdout


def test_overhead_rows_share_the_ratio_direction():
    """A 1-element row that is 2.38x faster than aten but misses a 0.35 (ours/aten) target:
    table, target and chart all speak of the ratio aten/ours, so the red bar stops short of
    its target (>= 2.86x)."""
    row = {"kind": "overhead", "target": {"ratio": None, "pct_of_reference": None, "overhead": 0.35},
           "ratio": 2.38, "overhead": 1 / 2.38}
    row["met"] = bench._met(row)
    assert row["met"] is False
    assert bench._target_cell(row) == ">= 2.86x"
    assert bench._ratio_target(row) == pytest.approx(1 / 0.35) and bench._ratio_target(row) > row["ratio"]
    throughput = _row(3.5, 90.0, 4.0, 95.0)
    assert bench._ratio_target(throughput) == 3.0 and throughput["met"]


def test_default_output_is_the_current_directory(tmp_path, monkeypatch, capsys):
    """Without --out, the files go to the current directory, not the source tree."""
    monkeypatch.chdir(tmp_path)
    assert main(["bench", "--tiny", "--op", "elu", "--kind", "overhead"]) == 0
    assert len(list(tmp_path.glob("*-tiny.json"))) == 1 and len(list(tmp_path.glob("*-tiny.md"))) == 1
    assert f"json: {tmp_path}" in capsys.readouterr().out
