// run_model: loads a model.so made by `sinter compile`, feeds it deterministic non-zero inputs
// built from its signature, runs it with sinter_session_run_host and prints every output's name,
// dtype, shape and first values. It links only libsinter_rt.
//
//   run_model model.so [--device N] [--threads N] [--graphs 0|1] [--runs N] [--values N]
//
// With --runs N > 1 it also prints the median wall time of the runs after the first.
#include "sinter/runtime.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char *dtypeName(sinter_dtype dtype) {
  switch (dtype) {
  case SINTER_FLOAT32: return "f32";
  case SINTER_UINT8: return "u8";
  case SINTER_INT8: return "i8";
  case SINTER_UINT16: return "u16";
  case SINTER_INT16: return "i16";
  case SINTER_INT32: return "i32";
  case SINTER_INT64: return "i64";
  case SINTER_BOOL: return "bool";
  case SINTER_FLOAT16: return "f16";
  case SINTER_FLOAT64: return "f64";
  case SINTER_UINT32: return "u32";
  case SINTER_UINT64: return "u64";
  case SINTER_BFLOAT16: return "bf16";
  default: return nullptr; // the 8-, 4- and 2-bit types: this example neither fills nor prints them
  }
}

uint16_t floatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint32_t sign = (bits >> 16) & 0x8000u;
  int exponent = static_cast<int>((bits >> 23) & 0xFF) - 127 + 15;
  uint32_t mantissa = bits & 0x7FFFFFu;
  if (exponent <= 0)
    return static_cast<uint16_t>(sign); // the inputs made here are never that small
  if (exponent >= 31)
    return static_cast<uint16_t>(sign | 0x7C00u);
  uint32_t half = sign | (uint32_t(exponent) << 10) | (mantissa >> 13);
  if (mantissa & 0x1000u) // round half up
    ++half;
  return static_cast<uint16_t>(half);
}

float halfToFloat(uint16_t half) {
  uint32_t sign = uint32_t(half & 0x8000u) << 16;
  uint32_t exponent = (half >> 10) & 0x1F;
  uint32_t mantissa = half & 0x3FFu;
  uint32_t bits;
  if (exponent == 0) {
    float value = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -value : value;
  }
  if (exponent == 31)
    bits = sign | 0x7F800000u | (mantissa << 13);
  else
    bits = sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

/// Element i of input k: non-zero, small, varied; the same on every run and machine.
double inputValue(size_t k, size_t i) {
  double magnitude = static_cast<double>(1 + (i * 7 + k * 3) % 11) / 8.0;
  return (i % 2 == 0) ? magnitude : -magnitude;
}

void fillInput(const sinter_tensor_info &info, size_t k, std::vector<uint8_t> &buffer) {
  size_t count = sinter::rt::elementCount(info);
  buffer.assign(count * sinter::rt::dtypeSize(info.dtype), 0);
  for (size_t i = 0; i < count; ++i) {
    double real = inputValue(k, i);
    int64_t integer = static_cast<int64_t>(1 + (i * 7 + k * 3) % 5);
    void *at = buffer.data() + i * sinter::rt::dtypeSize(info.dtype);
    auto store = [&](auto value) { std::memcpy(at, &value, sizeof(value)); };
    switch (info.dtype) {
    case SINTER_FLOAT32: store(static_cast<float>(real)); break;
    case SINTER_FLOAT64: store(real); break;
    case SINTER_FLOAT16: store(floatToHalf(static_cast<float>(real))); break;
    case SINTER_BFLOAT16: {
      float value = static_cast<float>(real); // exact in bf16: a few significant bits only
      uint32_t bits;
      std::memcpy(&bits, &value, 4);
      store(static_cast<uint16_t>(bits >> 16));
      break;
    }
    case SINTER_INT8: store(static_cast<int8_t>(integer)); break;
    case SINTER_UINT8: store(static_cast<uint8_t>(integer)); break;
    case SINTER_INT16: store(static_cast<int16_t>(integer)); break;
    case SINTER_UINT16: store(static_cast<uint16_t>(integer)); break;
    case SINTER_INT32: store(static_cast<int32_t>(integer)); break;
    case SINTER_UINT32: store(static_cast<uint32_t>(integer)); break;
    case SINTER_INT64: store(integer); break;
    case SINTER_UINT64: store(static_cast<uint64_t>(integer)); break;
    case SINTER_BOOL: store(static_cast<uint8_t>(1)); break;
    default: break; // not reached: main checks the types first
    }
  }
}

std::string formatValue(sinter_dtype dtype, const uint8_t *at) {
  char text[64];
  auto load = [&](auto value) {
    std::memcpy(&value, at, sizeof(value));
    return value;
  };
  switch (dtype) {
  case SINTER_FLOAT32: std::snprintf(text, sizeof(text), "%.6g", load(float{})); break;
  case SINTER_FLOAT64: std::snprintf(text, sizeof(text), "%.9g", load(double{})); break;
  case SINTER_FLOAT16: std::snprintf(text, sizeof(text), "%.5g", halfToFloat(load(uint16_t{}))); break;
  case SINTER_BFLOAT16: {
    uint32_t bits = uint32_t(load(uint16_t{})) << 16;
    float value;
    std::memcpy(&value, &bits, 4);
    std::snprintf(text, sizeof(text), "%.4g", value);
    break;
  }
  case SINTER_INT8: std::snprintf(text, sizeof(text), "%d", load(int8_t{})); break;
  case SINTER_UINT8: std::snprintf(text, sizeof(text), "%u", load(uint8_t{})); break;
  case SINTER_BOOL: std::snprintf(text, sizeof(text), "%s", load(uint8_t{}) ? "true" : "false"); break;
  case SINTER_INT16: std::snprintf(text, sizeof(text), "%d", load(int16_t{})); break;
  case SINTER_UINT16: std::snprintf(text, sizeof(text), "%u", load(uint16_t{})); break;
  case SINTER_INT32: std::snprintf(text, sizeof(text), "%d", load(int32_t{})); break;
  case SINTER_UINT32: std::snprintf(text, sizeof(text), "%u", load(uint32_t{})); break;
  case SINTER_INT64: std::snprintf(text, sizeof(text), "%lld", (long long)load(int64_t{})); break;
  case SINTER_UINT64: std::snprintf(text, sizeof(text), "%llu", (unsigned long long)load(uint64_t{})); break;
  default: std::snprintf(text, sizeof(text), "?"); break; // not reached: main checks the types first
  }
  return text;
}

std::string shapeText(const sinter_tensor_info &info) {
  std::string text = "[";
  for (int32_t axis = 0; axis < info.rank; ++axis)
    text += (axis ? "," : "") + std::to_string(info.dims[axis]);
  return text + "]";
}

int usage() {
  std::fprintf(stderr,
               "usage: run_model MODEL.so [--device N] [--threads N] [--graphs 0|1] [--runs N] "
               "[--values N]\n");
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2)
    return usage();
  std::string path = argv[1];
  sinter_session_options options;
  sinter_session_options_init(&options);
  int runs = 1;
  int shown = 8;
  for (int i = 2; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc)
      return usage();
    int value = std::atoi(argv[++i]);
    if (flag == "--device")
      options.device = value;
    else if (flag == "--threads")
      options.threads = value;
    else if (flag == "--graphs")
      options.use_graphs = value;
    else if (flag == "--runs")
      runs = std::max(1, value);
    else if (flag == "--values")
      shown = std::max(0, value);
    else
      return usage();
  }

  try {
    sinter::rt::Model model(path);
    sinter::rt::Session session(model, &options);
    std::vector<sinter_tensor_info> inputInfo = model.inputs();
    std::vector<sinter_tensor_info> outputInfo = model.outputs();

    std::vector<std::vector<uint8_t>> inputData(inputInfo.size()), outputData(outputInfo.size());
    std::vector<sinter_tensor> inputs, outputs;
    for (const std::vector<sinter_tensor_info> *list : {&inputInfo, &outputInfo})
      for (const sinter_tensor_info &info : *list)
        if (!dtypeName(info.dtype)) {
          std::fprintf(stderr, "run_model: %s has element type %d, which this example does not handle; "
                               "`sinter run` does\n", info.name, int(info.dtype));
          return 1;
        }
    for (size_t k = 0; k < inputInfo.size(); ++k) {
      fillInput(inputInfo[k], k, inputData[k]);
      inputs.push_back(sinter::rt::makeTensor(inputInfo[k], inputData[k].data()));
    }
    for (size_t k = 0; k < outputInfo.size(); ++k) {
      outputData[k].assign(sinter::rt::elementCount(outputInfo[k]) *
                               sinter::rt::dtypeSize(outputInfo[k].dtype),
                           0);
      outputs.push_back(sinter::rt::makeTensor(outputInfo[k], outputData[k].data()));
    }

    std::vector<double> milliseconds;
    for (int run = 0; run < runs; ++run) {
      auto start = std::chrono::steady_clock::now();
      session.runHost(inputs, outputs);
      std::chrono::duration<double, std::milli> elapsed = std::chrono::steady_clock::now() - start;
      if (run > 0)
        milliseconds.push_back(elapsed.count());
    }

    std::printf("%s: %s model, %zu input(s), %zu output(s)\n", path.c_str(),
                model.target() == SINTER_TARGET_CUDA ? "CUDA" : "CPU", inputInfo.size(),
                outputInfo.size());
    for (size_t k = 0; k < outputInfo.size(); ++k) {
      const sinter_tensor_info &info = outputInfo[k];
      size_t count = sinter::rt::elementCount(info);
      std::printf("%s %s %s:", info.name, dtypeName(info.dtype), shapeText(info).c_str());
      for (size_t i = 0; i < count && i < static_cast<size_t>(shown); ++i)
        std::printf(" %s", formatValue(info.dtype, outputData[k].data() +
                                                       i * sinter::rt::dtypeSize(info.dtype))
                               .c_str());
      std::printf("%s\n", count > static_cast<size_t>(shown) ? " ..." : "");
    }
    if (!milliseconds.empty()) {
      std::sort(milliseconds.begin(), milliseconds.end());
      std::printf("median of %zu runs: %.3f ms\n", milliseconds.size(),
                  milliseconds[milliseconds.size() / 2]);
    }
  } catch (const sinter::rt::Error &error) {
    std::fprintf(stderr, "run_model: %s\n", error.what());
    return 1;
  }
  return 0;
}
