"""sinter_session_run_memory and sinter_session_copy on a real GPU (CI has none; the fake driver of
runtime_device_share_test.cpp checks the logic). For each CUDA artifact ARTIFACT.so in --work, on
one input: the outputs of a run whose inputs and outputs are all in device memory (cuMemAlloc'ed
here, filled and read back with sinter_session_copy), and of a run with inputs on the device and
outputs on the host, are bit-identical to sinter_session_run_host's. This is the path the Triton
backend takes for GPU-memory inputs and outputs of KIND_GPU instances (docs/serving.md).

    python3 test/gpu/check_run_memory.py --lib DIR/libsinter_rt.so --work DIR
Exits 1 on any failed check."""
import argparse
import ctypes
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from sinter_ctypes import Tensor, TensorInfo, load_runtime, tensor  # noqa: E402

NUMPY = {1: np.float32, 6: np.int32, 7: np.int64, 10: np.float16, 11: np.float64, 9: np.bool_}
HOST, DEVICE = 0, 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", required=True, type=Path)
    parser.add_argument("--work", required=True, type=Path)
    args = parser.parse_args()
    rt = load_runtime(args.lib)
    cuda = ctypes.CDLL("libcuda.so.1")
    assert cuda.cuInit(0) == 0

    def check(status, what):
        if status != 0:
            raise RuntimeError(f"{what}: {rt.sinter_last_error().decode()}")

    failures = 0
    for artifact in sorted(args.work.glob("*.so")):
        model, session = ctypes.c_void_p(), ctypes.c_void_p()
        check(rt.sinter_model_load(str(artifact).encode(), ctypes.byref(model)), "load")
        check(rt.sinter_session_create(model, None, ctypes.byref(session)), "session")
        # The session retained the device's primary context and made it current in its calls; the
        # allocations below need a current context too: the same primary context.
        device, context = ctypes.c_int(), ctypes.c_void_p()
        assert cuda.cuDeviceGet(ctypes.byref(device), 0) == 0
        assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) == 0
        assert cuda.cuCtxPushCurrent_v2(context) == 0

        def infos(count, info):
            out = []
            for i in range(count(model)):
                value = TensorInfo()
                check(info(model, i, ctypes.byref(value)), "info")
                out.append((value.dtype, tuple(value.dims[:value.rank])))
            return out

        rng = np.random.default_rng(5)
        inputs = []
        for dtype, dims in infos(rt.sinter_model_input_count, rt.sinter_model_input_info):
            numpy = NUMPY[dtype]
            inputs.append(rng.integers(0, 2, dims).astype(numpy) if np.issubdtype(numpy, np.integer)
                          else (rng.uniform(0.1, 1, dims) * rng.choice([-1, 1], dims)).astype(numpy))
        output_infos = infos(rt.sinter_model_output_count, rt.sinter_model_output_info)
        host_out = [np.zeros(dims, NUMPY[dtype]) for dtype, dims in output_infos]
        ins = (Tensor * len(inputs))(*[tensor(a, d) for a, (d, _) in zip(
            inputs, infos(rt.sinter_model_input_count, rt.sinter_model_input_info))])
        outs = (Tensor * len(host_out))(*[tensor(a, d) for a, (d, _) in zip(host_out, output_infos)])
        check(rt.sinter_session_run_host(session, ins, len(inputs), outs, len(host_out)), "run_host")

        def device_copy(array):
            pointer = ctypes.c_uint64()
            assert cuda.cuMemAlloc_v2(ctypes.byref(pointer), max(array.nbytes, 1)) == 0
            check(rt.sinter_session_copy(session, ctypes.c_void_p(pointer.value), DEVICE,
                                         array.ctypes.data_as(ctypes.c_void_p), HOST,
                                         ctypes.c_size_t(array.nbytes)), "copy in")
            return pointer.value

        device_in = [device_copy(a) for a in inputs]
        device_out = [device_copy(np.zeros_like(a)) for a in host_out]
        ins_device = (Tensor * len(inputs))(*ins)
        for i, pointer in enumerate(device_in):
            ins_device[i].data = pointer
        outs_device = (Tensor * len(host_out))(*outs)
        for i, pointer in enumerate(device_out):
            outs_device[i].data = pointer
        in_memory = (ctypes.c_int32 * len(inputs))(*[DEVICE] * len(inputs))
        out_memory = (ctypes.c_int32 * len(host_out))(*[DEVICE] * len(host_out))
        check(rt.sinter_session_run_memory(session, ins_device, in_memory, len(inputs), outs_device,
                                           out_memory, len(host_out)), "run_memory (device)")
        same = True
        for i, expected in enumerate(host_out):
            back = np.zeros_like(expected)
            check(rt.sinter_session_copy(session, back.ctypes.data_as(ctypes.c_void_p), HOST,
                                         ctypes.c_void_p(device_out[i]), DEVICE,
                                         ctypes.c_size_t(back.nbytes)), "copy out")
            same = same and np.array_equal(back, expected)
        mixed = [np.zeros_like(a) for a in host_out]
        outs_host = (Tensor * len(mixed))(*[tensor(a, d) for a, (d, _) in zip(mixed, output_infos)])
        host_memory = (ctypes.c_int32 * len(mixed))(*[HOST] * len(mixed))
        check(rt.sinter_session_run_memory(session, ins_device, in_memory, len(inputs), outs_host,
                                           host_memory, len(mixed)), "run_memory (mixed)")
        same = same and all(np.array_equal(a, b) for a, b in zip(mixed, host_out))
        print(f"{artifact.name}: device-memory runs {'bit-identical' if same else 'DIFFER'}")
        failures += not same
        for pointer in device_in + device_out:
            cuda.cuMemFree_v2(ctypes.c_uint64(pointer))
        popped = ctypes.c_void_p()
        cuda.cuCtxPopCurrent_v2(ctypes.byref(popped))
        cuda.cuDevicePrimaryCtxRelease_v2(device)
        rt.sinter_session_destroy(session)
        rt.sinter_model_free(model)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
