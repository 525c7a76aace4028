#!/usr/bin/env python3
"""Runs the ONNX backend node tests through the sinter CLI and classifies every test.

    .venv/bin/python test/conformance/run_node_tests.py [--target reference] [--jobs 2]
        [--timeout 60] [--filter REGEX] [--json results.json] [--sinter PATH]

The reference target runs `sinter run model.onnx input_0.pb ... --reference --output-dir D
--output-format pb` (inputs positionally, outputs as D/output_K.pb); a compiled target first
runs `sinter compile model.onnx --target T -o model.so`, then `sinter run model.so ...`.

Bound inputs (compiled targets): many node tests feed, as a graph input, a tensor that decides a
shape (Reshape's shape, a reduction's axes, Trilu's k). An ahead-of-time compile needs it as a
constant, and sinter's compile error then names those inputs ("--bind-input k=FILE"). The runner
compiles again with exactly those inputs bound to the data set's values (`--bind-input
k=input_1.pb`), repeating while the error names new ones, and runs the artifact on the other
inputs. Such a test is specialised to its data set's values, as a user's artifact would be: it
counts as a pass when the outputs match, and its result carries `"bound": [names]` so the
scoreboard can say how many passed that way (and `"all_inputs_bound": true` when no input was
left: such an artifact takes no inputs, and constant folding may have computed its outputs while
compiling, so the pass says little about the generated kernels).

For each test folder (model.onnx, test_data_set_N/input_K.pb and output_K.pb; see node_tests.py
for where they come from) and each of its data sets, the target's commands run in a scratch
folder, and the outputs they write are compared with the expected ones by ONNX's own backend
runner (`Runner.assert_similar_outputs`: same shape and dtype, then numpy's assert_allclose
with the test's rtol / atol, 1e-3 / 1e-7 for node tests).

Categories, decided from the CLI's exit status and message (see `classify_failure`):
  pass             every data set matched
  wrong-result     exit 0 but an output is missing, unreadable or different
  unsupported-op   exit 1 and the importer's "unsupported op types: ..." list
  import-error     exit 1 while reading or importing the model (the importer starts its
                   messages with the model's file name)
  compile-error    a compiled target only: `sinter compile` exits 1 after importing the model
                   (no lowering for an op, a shape that depends on input data, an attribute the
                   code generator refuses)
  runtime-error    exit 1 otherwise: loading the inputs, or running (bad data, a failed check)
  crash            killed by a signal, exit 2 (internal error) or any exit code but 0, 1, 2
  timeout          over --timeout seconds (the whole process group is killed)
  unsupported-type an input or output is a sequence, optional, map or string (found before
                   running), or exit 1 on a tensor "element type X, which sinter does not support"
  spec-undefined   exit 0 and every output element the ONNX spec defines matches, but some
                   expected elements are values the spec leaves undefined (a Cast of a float
                   outside the integer target's range, NaN or infinity: "fixed point: undefined
                   if OOR"); the test data holds whatever the generating machine's numpy gave
                   there, which differs between CPUs (see spec_undefined.py)
  harness-error    this script failed on the test (a bug here, not in sinter)
A test never takes the run down: each runs in its own process group under a time and memory
limit, and every exception in the harness becomes that test's result.
"""
import argparse
import json
import os
import re
import resource
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import onnx
from onnx import numpy_helper
from onnx.backend.test.runner import Runner

sys.path.insert(0, str(Path(__file__).resolve().parent))
import node_tests  # noqa: E402
import spec_undefined  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CATEGORIES = ["pass", "wrong-result", "unsupported-op", "import-error", "compile-error",
              "runtime-error", "crash", "timeout", "unsupported-type", "spec-undefined",
              "harness-error"]
UNSUPPORTED_OPS = re.compile(r"unsupported op types?:\s*(.*)", re.IGNORECASE)
UNSUPPORTED_ELEMENT_TYPE = re.compile(r"element type \w+, which sinter does not support")
# One entry of the importer's list, "ai.onnx:Attention x3 (opset 23)": the op, domain-qualified
# unless it is ai.onnx.
UNSUPPORTED_OP_ENTRY = re.compile(r"(?:ai\.onnx:)?([\w.]+:)?(\w+) x\d+")
# sinter's hint when a compile needs an input's data: "... with --bind-input k=FILE".
BIND_HINT = re.compile(r"--bind-input (\S+?)=FILE")


def run_commands(target, sinter, model, inputs, out_dir, scratch, bound=()):
    """The CLI commands that run `model` on `inputs` ({graph input name: .pb file}, in graph-input
    order) for a target and leave one .pb per output in out_dir: `sinter run` on the ONNX model
    for the reference target, else on scratch/model.so that compile_command wrote. The inputs in
    `bound` were bound when compiling, so they are not fed."""
    outputs = ["--output-dir", str(out_dir), "--output-format", "pb"]
    if target == "reference":
        feeds = [str(path) for path in inputs.values()]  # positional: the model's input order
        return [[*sinter, "run", str(model), *feeds, "--reference", *outputs]]
    if not bound:
        feeds = [str(path) for path in inputs.values()]
    else:
        feeds = [f"--input={name}={path}" for name, path in inputs.items() if name not in bound]
    return [[*sinter, "run", str(scratch / "model.so"), *feeds, *outputs]]


def compile_command(target, sinter, model, inputs, scratch, bound=(), arch=None, precision="fp32"):
    """`sinter compile` of `model` to scratch/model.so, with the inputs in `bound` bound to their
    data-set values (and, for cuda, for one architecture when `arch` is given; with 16-bit
    storage when `precision` says so)."""
    binds = [f"--bind-input={name}={inputs[name]}" for name in bound]
    archs = ["--arch", arch] if target == "cuda" and arch else []
    storage = ["--precision", precision] if precision != "fp32" else []
    return [*sinter, "compile", str(model), "--target", target, *archs, *storage, "-o",
            str(scratch / "model.so"), *binds]


def compile_binding_inputs(args, model, inputs, scratch):
    """Compiles for a compiled target: ((category, reason) or None on success, bound input names).

    An ahead-of-time compile needs some inputs' data (a Reshape's shape, Trilu's k, a reduction's
    axes); many node tests feed those as graph inputs. When sinter says which inputs a shape or
    an operand depends on ("... --bind-input k=FILE"), the compile is retried with exactly those
    bound to this data set's values, until it succeeds or names nothing new."""
    bound = []
    while True:
        code, text = run_command(compile_command(args.target, args.sinter, model, inputs, scratch,
                                                 bound, args.arch, args.precision),
                                 args.timeout, args.memory_limit_mb)
        failure = classify_failure(code, text, model, compiling=True)
        if failure is None:
            return None, bound
        named = [name for name in dict.fromkeys(BIND_HINT.findall(text))
                 if name in inputs and name not in bound]
        if failure[0] != "compile-error" or not named:
            return failure, bound
        bound += named


def run_command(command, timeout, memory_limit_mb):
    """(exit code or negative signal, or None on timeout; stderr + stdout text)."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)
    if memory_limit_mb:  # set from here: preexec_fn is unsafe with threads
        limit = memory_limit_mb * 1024 * 1024
        try:
            resource.prlimit(process.pid, resource.RLIMIT_AS, (limit, limit))
        except ProcessLookupError:
            pass  # already exited
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return None, ""
    text = (stderr + stdout).decode("utf-8", errors="replace")
    return process.returncode, text


def first_line(text, limit=400):
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    line = lines[0] if lines else "(no message)"
    return line if len(line) <= limit else line[:limit] + "..."


def error_message(text, test_dir):
    """The CLI's error message ("sinter: error: MESSAGE"; else the first line), with the test
    folder's path left out so reasons read the same on every machine."""
    match = re.search(r"^sinter: error: (.*)$", text, re.MULTILINE)
    message = match.group(1) if match else first_line(text)
    if match and message.endswith(":"):  # the cause is on the next line ("linking failed:")
        following = text[match.end():].strip().splitlines()
        message += " " + following[0].strip() if following else ""
    message = message.replace(str(test_dir) + os.sep, "")
    # Scratch folders ("/tmp/sinter-node-1a2b/model.so") differ per run; keep the file name.
    message = re.sub(r"[^\s'\"]*sinter-node-[^/\s]+/", "", message)
    return first_line(message)


def classify_failure(code, text, model, compiling=False):
    """(category, reason) for a command that did not succeed; None when it exited 0.
    `compiling`: the command is `sinter compile`, whose other failures are compile errors."""
    if code is None:
        return "timeout", "timed out"
    if code == 0:
        return None
    message = error_message(text, Path(model).parent)
    if code < 0:
        return "crash", f"killed by {signal.Signals(-code).name}: {message}"
    if code == 2:
        return "crash", f"internal error: {message}"
    if code != 1:
        return "crash", f"exit code {code}: {message}"
    match = UNSUPPORTED_OPS.search(message)
    if match:
        return "unsupported-op", match.group(1)
    if UNSUPPORTED_ELEMENT_TYPE.search(message):
        return "unsupported-type", message
    # The importer starts every message with the model's file name (its folder is left out
    # above); errors while loading the inputs or running name an input file, a node or a value.
    if message.startswith(Path(model).name + ":"):
        return "import-error", message
    return ("compile-error" if compiling else "runtime-error"), message


def read_outputs(out_dir, names):
    """The written outputs as arrays, in graph-output order: found by the TensorProto's name,
    else by the file name output_K.pb or NAME.pb."""
    by_name, by_file = {}, {}
    for path in sorted(Path(out_dir).glob("*.pb")):
        tensor = onnx.TensorProto()
        tensor.ParseFromString(path.read_bytes())
        array = numpy_helper.to_array(tensor)
        by_file[path.stem] = array
        if tensor.name:
            by_name[tensor.name] = array
    outputs = []
    for index, name in enumerate(names):
        for key, table in ((name, by_name), (f"output_{index}", by_file), (name, by_file)):
            if key in table:
                outputs.append(table[key])
                break
        else:
            raise LookupError(f"no output file for output {index} ({name!r})")
    return outputs


def read_expected(data_set):
    def load(path):
        tensor = onnx.TensorProto()
        tensor.ParseFromString(path.read_bytes())
        return numpy_helper.to_array(tensor)

    def ordered(kind):
        files = list(data_set.glob(f"{kind}_*.pb"))
        return sorted(files, key=lambda p: int(p.stem.split("_")[1]))

    return ordered("input"), [load(p) for p in ordered("output")]


def run_data_set(args, test_dir, info, data_set, scratch):
    """(category, reason, bound input names) for one data set."""
    files, expected = read_expected(data_set)
    inputs = {name: path for name, path in zip(info["input_names"], files)}
    out_dir = scratch / "outputs"
    out_dir.mkdir()
    model = test_dir / "model.onnx"
    bound = []
    if args.target != "reference":
        failure, bound = compile_binding_inputs(args, model, inputs, scratch)
        if failure:
            return (*failure, bound)
    for command in run_commands(args.target, args.sinter, model, inputs, out_dir, scratch, bound):
        code, text = run_command(command, args.timeout, args.memory_limit_mb)
        failure = classify_failure(code, text, model)
        if failure:
            return (*failure, bound)
    try:
        actual = read_outputs(out_dir, info["output_names"])
    except Exception as error:  # noqa: BLE001  (missing or unreadable output: a wrong result)
        return "wrong-result", first_line(str(error)), bound
    rtol, atol = node_tests.tolerances(test_dir)
    undefined = spec_undefined.undefined_elements(model, files, [e.shape for e in expected])
    if undefined.whole_test:
        return "spec-undefined", undefined.reason, bound
    try:
        if undefined.masks:  # compare only the elements the spec defines
            expected, actual = spec_undefined.defined_parts(expected, actual, undefined.masks)
        Runner.assert_similar_outputs(expected, actual, rtol=rtol, atol=atol)
    except (AssertionError, TypeError, ValueError) as error:
        details = [line.strip() for line in str(error).splitlines() if line.strip()]
        return "wrong-result", "; ".join(details[:4])[:400], bound
    if undefined.masks:
        return "spec-undefined", undefined.reason, bound
    return "pass", "", bound


def run_test(args, test_dir):
    started = time.monotonic()
    result = {"op": None, "category": "harness-error", "reason": ""}
    try:
        info = node_tests.describe(test_dir)
        result["op"] = info["op"]
        if info["type_problem"]:
            result.update(category="unsupported-type", reason=info["type_problem"])
        elif not info["data_sets"]:
            result.update(reason="no test_data_set_* folder")
        else:
            bound = {}
            for data_set in info["data_sets"]:
                with tempfile.TemporaryDirectory(prefix="sinter-node-") as scratch:
                    category, reason, names = run_data_set(args, test_dir, info, data_set,
                                                           Path(scratch))
                bound.update(dict.fromkeys(names))
                if category == "pass" and result["category"] == "spec-undefined":
                    continue  # an earlier data set's undefined elements still stand
                result.update(category=category, reason=reason)
                if category not in ("pass", "spec-undefined"):
                    break
            if bound:  # compiled with these inputs' data-set values as constants
                result["bound"] = list(bound)
                # Then the artifact takes no inputs: constant folding may have computed it all.
                result["all_inputs_bound"] = set(info["input_names"]) <= set(bound)
    except Exception as error:  # noqa: BLE001  (one test's harness failure stays with that test)
        result.update(category="harness-error", reason=f"{type(error).__name__}: {error}")
    result["seconds"] = round(time.monotonic() - started, 3)
    return test_dir.name, result


def summarize(results):
    """Lines with the totals per category and the most frequent unsupported ops and reasons."""
    totals = Counter(r["category"] for r in results.values())
    lines = [f"{len(results)} tests: " + ", ".join(f"{c} {totals[c]}" for c in CATEGORIES if totals[c])]
    bound = sum(r["category"] == "pass" and bool(r.get("bound")) for r in results.values())
    if bound:
        every = sum(r["category"] == "pass" and bool(r.get("all_inputs_bound"))
                    for r in results.values())
        lines.append(f"{bound} of the passes compiled with inputs bound to their test values "
                     f"(--bind-input); {every} of those bound every input")
    unsupported = Counter()
    for r in results.values():
        if r["category"] == "unsupported-op":
            unsupported.update(domain + op for domain, op in UNSUPPORTED_OP_ENTRY.findall(r["reason"]))
    if unsupported:
        lines.append("most common unsupported ops: "
                     + ", ".join(f"{op} ({n} tests)" for op, n in unsupported.most_common(12)))
    for category in CATEGORIES[1:]:
        reasons = Counter(re.sub(r"\d+", "N", r["reason"])[:120]
                          for r in results.values() if r["category"] == category)
        if category not in ("unsupported-op", "unsupported-type") and reasons:
            lines.append(f"{category}, most common reasons:")
            lines += [f"  {n:4d}  {reason}" for reason, n in reasons.most_common(5)]
    return lines


def default_build_dir():
    return Path(os.environ.get("SINTER_BUILD", ROOT / "build"))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="reference", help="reference (default), cpu or cuda")
    parser.add_argument("--sinter", default=os.environ.get("SINTER_BIN"),
                        help="the CLI, as a command line (default: $SINTER_BIN, else BUILD/bin/sinter)")
    parser.add_argument("--arch", help="cuda target: compile for this architecture only (e.g. sm_90) "
                        "instead of sinter's default list")
    parser.add_argument("--precision", choices=["fp32", "fp16", "bf16"], default="fp32",
                        help="compiled targets: sinter compile --precision (docs/precision.md). The "
                        "node tests' tolerance is float32's, so fp16/bf16 runs look for crashes and "
                        "compile errors; their results go to precision-P-results-TARGET.json, out of "
                        "the scoreboard's way")
    parser.add_argument("--jobs", type=int, default=2, help="tests run at once (default 2)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds per command (default 60)")
    parser.add_argument("--memory-limit-mb", type=int, default=8192,
                        help="address-space limit per command, 0 for none (default 8192)")
    parser.add_argument("--filter", help="run only the tests whose name this regex finds")
    parser.add_argument("--data", type=Path,
                        help="folder of node-test folders (default: the onnx package's, else "
                             "materialised under BUILD/conformance)")
    parser.add_argument("--json", type=Path, help="result file (default BUILD/conformance/results-TARGET.json)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every test that does not pass")
    args = parser.parse_args(argv)
    build = default_build_dir()
    args.sinter = shlex.split(args.sinter) if args.sinter else [str(build / "bin" / "sinter")]
    prefix = "" if args.precision == "fp32" else f"precision-{args.precision}-"
    args.json = args.json or build / "conformance" / f"{prefix}results-{args.target}.json"
    args.data = args.data or node_tests.node_test_root(build / "conformance")
    return args


def main(argv=None):
    args = parse_args(argv)
    tests = node_tests.list_tests(args.data, args.filter)
    if not tests:
        print(f"no node tests match in {args.data}", file=sys.stderr)
        return 1
    started = time.monotonic()
    results = {}
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for done, (name, result) in enumerate(pool.map(lambda t: run_test(args, t), tests), 1):
            results[name] = result
            if args.verbose and result["category"] != "pass":
                print(f"{name}: {result['category']}: {result['reason']}")
            if done % 200 == 0:
                print(f"... {done}/{len(tests)}", file=sys.stderr)
    elapsed = time.monotonic() - started
    report = {
        "target": args.target,
        "onnx_version": onnx.__version__,
        "sinter": " ".join(args.sinter),
        "filter": args.filter,
        "jobs": args.jobs,
        "timeout_s": args.timeout,
        "seconds": round(elapsed, 1),
        "totals": {c: sum(r["category"] == c for r in results.values()) for c in CATEGORIES},
        "passed_with_bound_inputs": sum(r["category"] == "pass" and bool(r.get("bound"))
                                        for r in results.values()),
        "tests": results,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    print("\n".join(summarize(results)))
    print(f"{elapsed:.1f} s with {args.jobs} jobs; results in {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
