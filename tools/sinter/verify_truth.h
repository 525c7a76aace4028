// `sinter verify`'s truths other than the reference evaluator: a program that runs the model
// (onnxruntime through Python, or the user's --against-command), fed and read through files.
//
// The protocol of a truth command: it is run as `CMD MODEL INPUT_DIR OUTPUT_DIR` (through
// /bin/sh, so CMD may hold arguments); INPUT_DIR holds input_K.npy for the K-th graph input of
// MODEL (ONNX order, bound inputs included), and it must write output_K.npy for the K-th graph
// output into OUTPUT_DIR, then exit 0. Its stdout goes to sinter's stderr.
#pragma once

#include "sinter/ir/tensor.h"

#include <string>
#include <vector>

namespace sinter::cli {

/// Runs `argv` (argv[0] looked up on PATH) with stdout sent to stderr; returns its exit status
/// (128 + the signal when killed; 127 when it cannot be started).
int runProgram(const std::vector<std::string> &argv, bool quiet = false);

/// The argv that runs onnxruntime on the CPU as a truth command: Python from $SINTER_PYTHON, else
/// $VIRTUAL_ENV/bin/python, else python3, checked to import onnxruntime; a UserError saying what
/// to install or set when it does not.
std::vector<std::string> onnxruntimeCommand();
/// The argv that runs a user's --against-command through /bin/sh.
std::vector<std::string> shellCommand(const std::string &command);

/// Runs a truth command on one input set and reads its `outputCount` outputs.
std::vector<Tensor> runTruthCommand(const std::vector<std::string> &argv, const std::string &model,
                                    const std::vector<const Tensor *> &inputs, size_t outputCount,
                                    const std::string &description);

} // namespace sinter::cli
