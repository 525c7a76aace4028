"""What the kernel checks on the GPU (check_row_kernels.py, check_depthwise.py,
check_convolution.py) share: their command line, a small model's inputs saved for `sinter run`
and onnxruntime's output for them, its output from the CUDA artifact (or, with --no-gpu, from a
CPU-target artifact of the same model), the comparison of the two (max|a-b|/max|b| at fp32,
relative L2 at fp16 and bf16, with the GPU suite's bounds, run_gpu_suite.py), and a line a check."""
import argparse
import subprocess
from pathlib import Path

import numpy as np
import onnxruntime as ort

from run_gpu_suite import FLOAT_TOLERANCE, PRECISION_L2_TOLERANCE


def arguments(doc):
    """The checks' command line (--bin DIR --work DIR [--no-gpu]), the work folder made; (args,
    the sinter binary's path)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--bin", required=True, type=Path)
    parser.add_argument("--work", required=True, type=Path)
    parser.add_argument("--no-gpu", action="store_true", help="run CPU-target artifacts instead")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    return args, str(args.bin / "sinter")


def case_folder(work, name):
    """The folder of the case called `name` under `work`, made."""
    case = work / name.replace(" ", "_").replace(",", "")
    case.mkdir(exist_ok=True)
    return case


def onnxruntime_output(model, feeds):
    """The model's first output from onnxruntime's CPU provider, as float64: the truth."""
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0].astype(np.float64)


def report(name, label, what, error, problems, note=""):
    """Prints the check's line; returns whether it failed."""
    print(f"{'FAIL' if problems else 'ok  '} {name} {label}: {what} {error:.3g}{note}"
          + ("" if not problems else " -- " + "; ".join(problems)), flush=True)
    return bool(problems)


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
