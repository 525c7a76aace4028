// Tensor files in numpy's formats.
//
//  * .npy: one array. Format versions 1.0, 2.0 and 3.0 are read; 1.0 is written (2.0 when the
//    header needs more than 64 KiB). Little-endian dtypes only (`<f4 <f8 <f2 <i1 <u1 <i2 <u2 <i4
//    <u4 <i8 <u8 |b1`), C order. Fortran order, big-endian data, object arrays, structured or
//    string dtypes are user errors that name the file.
//  * .npz: a zip archive of .npy entries, keyed by entry name without ".npy" (as numpy.load
//    does). Stored and deflated entries are read, their CRC32 checked. Written archives use
//    stored entries, the DOS epoch (1980-01-01 00:00) as every timestamp and the entries in the
//    order given, so equal inputs give byte-identical files. Archives over 4 GiB (zip64) are read
//    but not written.
//
// No input, however malformed (truncated, bad magic, a header that lies about the data size, a
// zip directory pointing outside the file), crashes: each is a UserError naming the file.
#pragma once

#include "sinter/ir/tensor.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sinter::io {

/// A named tensor, as stored in an .npz archive or produced by a graph output.
using NamedTensor = std::pair<std::string, Tensor>;

/// Parses the bytes of an .npy file. `displayName` names the source in error messages.
Tensor parseNpy(std::string_view bytes, const std::string &displayName);
/// Serializes a tensor as .npy bytes. bfloat16 has no numpy dtype: UserError.
std::string serializeNpy(const Tensor &tensor);

/// Reads an .npy file.
Tensor readNpy(const std::string &path);
/// Writes an .npy file (replacing any existing file).
void writeNpy(const std::string &path, const Tensor &tensor);

/// Parses the bytes of an .npz archive; entries keep the archive's order.
std::vector<NamedTensor> parseNpz(std::string_view bytes, const std::string &displayName);
/// Serializes tensors as a deterministic .npz archive of stored entries. Names must be unique
/// and non-empty; each becomes the entry "NAME.npy".
std::string serializeNpz(const std::vector<NamedTensor> &tensors);

/// Reads an .npz archive.
std::vector<NamedTensor> readNpz(const std::string &path);
/// Writes an .npz archive (replacing any existing file).
void writeNpz(const std::string &path, const std::vector<NamedTensor> &tensors);

/// Reads a whole file into memory; UserError when it cannot be read.
std::string readFileBytes(const std::string &path);
/// Writes bytes to a file, replacing it; UserError when it cannot be written.
void writeFileBytes(const std::string &path, std::string_view bytes);

} // namespace sinter::io
