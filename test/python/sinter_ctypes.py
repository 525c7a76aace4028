"""libsinter_rt's C structs for ctypes (include/sinter/runtime.h), shared by the tests that call
the shared library directly (test_pool.py) and the GPU machine's checks (test/gpu/). It needs
numpy only, so it runs where pytest and onnx are not installed."""
import ctypes

MAX_RANK = 8  # SINTER_MAX_RANK


class TensorInfo(ctypes.Structure):  # sinter_tensor_info
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int32),
                ("dims", ctypes.c_int64 * MAX_RANK)]


class Tensor(ctypes.Structure):  # sinter_tensor
    _fields_ = [("data", ctypes.c_void_p), ("byte_size", ctypes.c_size_t), ("dtype", ctypes.c_int),
                ("rank", ctypes.c_int32), ("dims", ctypes.c_int64 * MAX_RANK)]


class DeviceUsage(ctypes.Structure):  # sinter_device_usage
    _fields_ = [("sessions", ctypes.c_int32), ("weight_uploads", ctypes.c_int32),
                ("weight_bytes", ctypes.c_uint64), ("arena_bytes", ctypes.c_uint64)]


def tensor(array, dtype):
    """A sinter_tensor over a contiguous numpy array, with the runtime's dtype code."""
    t = Tensor(array.ctypes.data, array.nbytes, dtype, array.ndim)
    for i, d in enumerate(array.shape):
        t.dims[i] = d
    return t


def load_runtime(path):
    """libsinter_rt with the return types the default (int) would get wrong."""
    runtime = ctypes.CDLL(str(path))
    runtime.sinter_last_error.restype = ctypes.c_char_p
    runtime.sinter_pool_session_count.restype = ctypes.c_int32
    return runtime
