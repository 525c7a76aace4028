"""bench/steps.py: a bench.json row's per-step times summed by kernel family (the kernel's name
without its plan index), and two runs compared family by family. The expected sums and lines are
worked out by hand from the rows below."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import steps  # noqa: E402


def row(model, steps_ms):
    return {"model": model, "batch": 32, "precision": "fp16",
            "sinter_steps": [{"name": name, "ms": ms} for name, ms in steps_ms]}


AFTER = [row("vit", [("fused_matmul_add_gelu_4", 0.25), ("fused_layernormalization_cast_2", 0.5),
                     ("fused_matmul_add_gelu_11", 0.5), ("fused_conv_0", 0.125)]),
         {"model": "bert", "batch": 32, "precision": "fp16", "status": "not run"}]
BEFORE = [row("vit", [("fused_matmul_add_gelu_4", 0.5), ("fused_matmul_add_gelu_11", 0.5),
                      ("fused_softmax_7", 0.25), ("fused_conv_0", 0.125)])]


def test_families_drop_only_the_trailing_plan_index():
    assert steps.family("fused_matmul_add_gelu_11") == "fused_matmul_add_gelu"
    assert steps.family("fused_conv_0") == "fused_conv"
    assert steps.family("fused_gather_gemm_cast") == "fused_gather_gemm_cast"
    assert steps.family("fused_attention_2_3") == "fused_attention_2"


def test_family_times_sum_each_familys_kernels():
    times = steps.family_times(AFTER[0]["sinter_steps"])
    assert times == {"fused_matmul_add_gelu": (0.75, 2), "fused_layernormalization_cast": (0.5, 1),
                     "fused_conv": (0.125, 1)}


def test_report_lists_families_slowest_first_and_skips_rows_without_steps():
    lines = steps.steps_report(AFTER).splitlines()
    assert lines == ["vit b32 fp16: 1.375 ms of steps",
                     "     0.750 x2   fused_matmul_add_gelu",
                     "     0.500 x1   fused_layernormalization_cast",
                     "     0.125 x1   fused_conv"]


def test_report_against_a_baseline_gives_both_times_and_the_difference():
    lines = steps.steps_report(AFTER, BEFORE).splitlines()
    assert lines[0] == "vit b32 fp16: 1.375 -> 1.375 ms of steps"
    assert lines[1] == "     1.000 ->    0.750 (-0.250) x2   fused_matmul_add_gelu"
    # A family only the baseline has (the softmax, fused away since) shows what it took.
    assert "     0.250 ->    0.000 (-0.250) x0   fused_softmax" in lines
    assert "     0.000 ->    0.500 (+0.500) x1   fused_layernormalization_cast" in lines
