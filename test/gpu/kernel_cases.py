"""What the kernel checks on the GPU (check_row_kernels.py, check_depthwise.py) share: a small
model's inputs saved for `sinter run`, its output from the CUDA artifact (or, with --no-gpu, from
a CPU-target artifact of the same model), and the comparison with onnxruntime's: max|a-b|/max|b|
at fp32, relative L2 at fp16 and bf16, with the GPU suite's bounds (run_gpu_suite.py)."""
import subprocess

import numpy as np

from run_gpu_suite import FLOAT_TOLERANCE, PRECISION_L2_TOLERANCE


def save_inputs(case, feeds):
    """Saves each input as CASE/NAME.npy; returns the `--input` arguments of `sinter run`."""
    files = []
    for key, value in feeds.items():
        np.save(case / f"{key}.npy", value)
        files += ["--input", f"{key}={case / f'{key}.npy'}"]
    return files


def output_of(sinter, model, cuda_artifact, case, label, flags, files, no_gpu):
    """Output `y` of the CUDA artifact, or with `no_gpu` of the model compiled for the CPU with
    `flags`, run on the saved inputs, as float64."""
    artifact = cuda_artifact
    if no_gpu:
        artifact = case / f"cpu_{label}.so"
        subprocess.run([sinter, "compile", str(model), "-o", str(artifact), "--force", "--target", "cpu", *flags],
                       check=True, capture_output=True)
    out = case / f"out_{label}.npz"
    subprocess.run([sinter, "run", str(artifact), *files, "-o", str(out), "--force"], check=True, capture_output=True)
    return np.load(out)["y"].astype(np.float64)


def compare(got, want, precision):
    """(error, what it measures, the problem or None): max rel at fp32, relative L2 otherwise."""
    if precision == "fp32":
        error = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
        limit, what = FLOAT_TOLERANCE, "max rel"
    else:
        error = float(np.linalg.norm(got - want) / np.linalg.norm(want))
        limit, what = PRECISION_L2_TOLERANCE, "rel L2"
    return error, what, None if error <= limit else f"{what} {error:.3g} > {limit}"
