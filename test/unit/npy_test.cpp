// .npy / .npz I/O: round trips, interchange with numpy itself (files numpy writes are read back,
// files sinter writes are checked by numpy), and malformed files that must give UserErrors.
#include "sinter/io/npy.h"
#include "sinter/support/error.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace sinter;
using namespace sinter::io;
namespace fs = std::filesystem;

namespace {

const DType kNumpyDTypes[] = {DType::Float32, DType::Float64, DType::Float16, DType::Int8,
                              DType::Uint8,   DType::Int16,   DType::Uint16,  DType::Int32,
                              DType::Uint32,  DType::Int64,   DType::Uint64,  DType::Bool};

/// Element i of the arrays the numpy scripts below make: (i * 7 - 5) % 11 for signed types,
/// (i * 3) % 200 for unsigned, i % 3 == 0 for bool, (i - 2.5) / 4 for floats (exact in f16).
double expectedValue(DType dtype, int64_t i) {
  if (dtype == DType::Bool)
    return i % 3 == 0;
  if (isFloat(dtype))
    return (i - 2.5) / 4;
  if (isSigned(dtype))
    return (i * 7 - 5) % 11; // C++ and Python agree here: i*7-5 >= 0 for i >= 1; i = 0 gives -5
  return (i * 3) % 200;
}

Tensor makeTensor(DType dtype, std::vector<int64_t> dims) {
  Tensor tensor(dtype, std::move(dims));
  for (int64_t i = 0; i < tensor.elementCount(); ++i)
    tensor.setDouble(i, expectedValue(dtype, i));
  return tensor;
}

std::string sourceDir() { return SINTER_SOURCE_DIR; }
std::string pythonPath() { return sourceDir() + "/.venv/bin/python"; }

class TempDir {
public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("sinter_npy_test_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string &name) const { return (path_ / name).string(); }

private:
  fs::path path_;
};

/// Runs a Python script with numpy; returns its exit status (or -1 when Python is missing).
int runPython(const TempDir &dir, const std::string &script) {
  if (!fs::exists(pythonPath()))
    return -1;
  std::string scriptPath = dir.file("script.py");
  std::ofstream(scriptPath) << script;
  std::string command = "'" + pythonPath() + "' '" + scriptPath + "' '" + dir.file("") + "'";
  int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

// The numpy side of the value formula above, and the dtypes by numpy name.
const char *kPythonPrelude = R"(
import sys, os, numpy as np
d = sys.argv[1]
names = {'f32': '<f4', 'f64': '<f8', 'f16': '<f2', 'i8': 'i1', 'u8': 'u1', 'i16': '<i2',
         'u16': '<u2', 'i32': '<i4', 'u32': '<u4', 'i64': '<i8', 'u64': '<u8', 'bool': '?'}
def make(name, shape):
    n = int(np.prod(shape))
    i = np.arange(n, dtype=np.int64)
    t = np.dtype(names[name])
    if t.kind == 'b': v = (i % 3 == 0)
    elif t.kind == 'f': v = (i - 2.5) / 4
    elif t.kind == 'i': v = np.where(i == 0, -5, (i * 7 - 5) % 11)
    else: v = (i * 3) % 200
    return v.astype(t).reshape(shape)
)";

void expectMatches(const Tensor &tensor, DType dtype, const std::vector<int64_t> &dims,
                   const std::string &what) {
  ASSERT_EQ(tensor.dtype(), dtype) << what;
  ASSERT_EQ(tensor.dims(), dims) << what;
  for (int64_t i = 0; i < tensor.elementCount(); ++i)
    ASSERT_EQ(tensor.getDouble(i), expectedValue(dtype, i)) << what << " element " << i;
}

void expectUserError(const std::function<void()> &action, const std::string &fragment) {
  try {
    action();
    ADD_FAILURE() << "expected a UserError mentioning '" << fragment << "'";
  } catch (const UserError &error) {
    EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos)
        << "message: " << error.what();
  }
}

std::string npyHeader(const std::string &dict, char version = 1) {
  std::string header = dict;
  size_t prefix = version == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64)
    header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += version;
  out += '\0';
  for (size_t i = 0; i < prefix - 8; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header;
}

} // namespace

TEST(Npy, RoundTripsEveryDtypeAndShape) {
  for (DType dtype : kNumpyDTypes)
    for (std::vector<int64_t> dims : {std::vector<int64_t>{}, {5}, {2, 3}, {2, 0, 4}, {1, 2, 1, 3}}) {
      Tensor original = makeTensor(dtype, dims);
      Tensor back = parseNpy(serializeNpy(original), "mem.npy");
      EXPECT_TRUE(back.identical(original)) << dtypeName(dtype) << shapeStr(shapeOf(dims));
    }
}

TEST(Npy, HeaderFollowsTheFormatSpec) {
  std::string bytes = serializeNpy(makeTensor(DType::Float32, {2, 3}));
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  size_t headerLength = uint8_t(bytes[8]) | (uint8_t(bytes[9]) << 8);
  EXPECT_EQ((10 + headerLength) % 64, 0u); // data aligned to 64 bytes
  std::string header = bytes.substr(10, headerLength);
  EXPECT_EQ(header.back(), '\n');
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 0), 0u);
  EXPECT_EQ(bytes.size(), 10 + headerLength + 24);
  EXPECT_NE(serializeNpy(makeTensor(DType::Int64, {7})).find("'shape': (7,)"), std::string::npos);
  EXPECT_NE(serializeNpy(makeTensor(DType::Int64, {})).find("'shape': ()"), std::string::npos);
}

TEST(Npy, Bfloat16HasNoNumpyDtype) {
  expectUserError([] { serializeNpy(Tensor(DType::BFloat16, {2})); }, "bf16");
}

TEST(Npy, ReadsFilesWrittenByNumpy) {
  TempDir dir;
  std::string script = std::string(kPythonPrelude) + R"(
for name in names:
    np.save(os.path.join(d, name + '.npy'), make(name, (2, 3)))
np.save(os.path.join(d, 'scalar.npy'), make('f64', ()))
np.save(os.path.join(d, 'empty.npy'), make('i32', (0, 4)))
for version in [(2, 0), (3, 0)]:
    with open(os.path.join(d, 'v%d.npy' % version[0]), 'wb') as f:
        np.lib.format.write_array(f, make('f32', (3, 1, 2)), version=version)
np.savez(os.path.join(d, 'stored.npz'), b=make('i64', (4,)), a=make('f16', (2, 2)))
np.savez_compressed(os.path.join(d, 'deflated.npz'), x=make('u8', (100, 3)), y=make('bool', (7,)))
)";
  int status = runPython(dir, script);
  if (status == -1)
    GTEST_SKIP() << "no " << pythonPath();
  ASSERT_EQ(status, 0);
  for (DType dtype : kNumpyDTypes) {
    std::string name(dtypeName(dtype));
    expectMatches(readNpy(dir.file(name + ".npy")), dtype, {2, 3}, name);
  }
  expectMatches(readNpy(dir.file("scalar.npy")), DType::Float64, {}, "scalar");
  expectMatches(readNpy(dir.file("empty.npy")), DType::Int32, {0, 4}, "empty");
  expectMatches(readNpy(dir.file("v2.npy")), DType::Float32, {3, 1, 2}, "version 2.0");
  expectMatches(readNpy(dir.file("v3.npy")), DType::Float32, {3, 1, 2}, "version 3.0");

  std::vector<NamedTensor> stored = readNpz(dir.file("stored.npz"));
  ASSERT_EQ(stored.size(), 2u);
  EXPECT_EQ(stored[0].first, "b"); // numpy writes keyword arguments in call order
  expectMatches(stored[0].second, DType::Int64, {4}, "stored b");
  EXPECT_EQ(stored[1].first, "a");
  expectMatches(stored[1].second, DType::Float16, {2, 2}, "stored a");

  std::vector<NamedTensor> deflated = readNpz(dir.file("deflated.npz"));
  ASSERT_EQ(deflated.size(), 2u);
  EXPECT_EQ(deflated[0].first, "x");
  expectMatches(deflated[0].second, DType::Uint8, {100, 3}, "deflated x");
  EXPECT_EQ(deflated[1].first, "y");
  expectMatches(deflated[1].second, DType::Bool, {7}, "deflated y");
}

TEST(Npy, NumpyReadsFilesSinterWrites) {
  TempDir dir;
  std::vector<NamedTensor> entries;
  for (DType dtype : kNumpyDTypes) {
    std::string name(dtypeName(dtype));
    writeNpy(dir.file(name + ".npy"), makeTensor(dtype, {3, 2}));
    entries.emplace_back("t_" + name, makeTensor(dtype, {2, 1, 2}));
  }
  writeNpy(dir.file("scalar.npy"), makeTensor(DType::Float32, {}));
  entries.emplace_back("odd/name with spaces", makeTensor(DType::Int32, {0}));
  writeNpz(dir.file("all.npz"), entries);

  std::string script = std::string(kPythonPrelude) + R"(
import zipfile
for name in names:
    a = np.load(os.path.join(d, name + '.npy'))
    e = make(name, (3, 2))
    assert a.dtype == e.dtype and a.shape == e.shape and (a == e).all(), name
s = np.load(os.path.join(d, 'scalar.npy'))
assert s.shape == () and s == make('f32', ())
z = np.load(os.path.join(d, 'all.npz'))
assert list(z.keys()) == ['t_' + n for n in names] + ['odd/name with spaces'], list(z.keys())
for name in names:
    a, e = z['t_' + name], make(name, (2, 1, 2))
    assert a.dtype == e.dtype and a.shape == e.shape and (a == e).all(), name
assert z['odd/name with spaces'].shape == (0,)
with zipfile.ZipFile(os.path.join(d, 'all.npz')) as f:
    assert f.testzip() is None  # CRCs check out
    for info in f.infolist():
        assert info.date_time == (1980, 1, 1, 0, 0, 0), info.date_time
        assert info.compress_type == zipfile.ZIP_STORED
)";
  int status = runPython(dir, script);
  if (status == -1)
    GTEST_SKIP() << "no " << pythonPath();
  EXPECT_EQ(status, 0);
}

TEST(Npz, RoundTripKeepsOrderAndIsDeterministic) {
  std::vector<NamedTensor> entries = {{"z", makeTensor(DType::Float32, {2, 2})},
                                      {"a", makeTensor(DType::Int64, {3})},
                                      {"m", makeTensor(DType::Bool, {})}};
  std::string bytes = serializeNpz(entries);
  EXPECT_EQ(bytes, serializeNpz(entries));
  std::vector<NamedTensor> back = parseNpz(bytes, "mem.npz");
  ASSERT_EQ(back.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back[i].first, entries[i].first);
    EXPECT_TRUE(back[i].second.identical(entries[i].second));
  }
  EXPECT_TRUE(parseNpz(serializeNpz({}), "empty.npz").empty());
  expectUserError([&] { serializeNpz({entries[0], entries[0]}); }, "two tensors named 'z'");
}

TEST(Npy, MalformedFilesAreUserErrors) {
  std::string good = serializeNpy(makeTensor(DType::Float32, {2, 3}));
  std::string data(24, '\0');
  expectUserError([] { parseNpy("", "f.npy"); }, "f.npy: not an .npy file");
  expectUserError([] { parseNpy("PK\x03\x04 hello world", "f.npy"); }, "bad magic");
  expectUserError([&] { parseNpy(good.substr(0, 9), "f.npy"); }, "not an .npy file");
  expectUserError([&] { parseNpy(good.substr(0, 40), "f.npy"); }, "truncated");
  expectUserError([&] { parseNpy(good.substr(0, good.size() - 1), "f.npy"); }, "truncated");
  expectUserError([&] { parseNpy(good + "x", "f.npy"); }, "unexpected bytes after");
  std::string badVersion = good;
  badVersion[6] = 9;
  expectUserError([&] { parseNpy(badVersion, "f.npy"); }, "version 9.0");

  auto withDict = [&](const std::string &dict) { return npyHeader(dict) + data; };
  expectUserError(
      [&] { parseNpy(withDict("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }"), "f.npy"); },
      "Fortran");
  expectUserError(
      [&] { parseNpy(withDict("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }"), "f.npy"); },
      "big-endian");
  expectUserError(
      [&] { parseNpy(withDict("{'descr': '|O', 'fortran_order': False, 'shape': (2, 3), }"), "f.npy"); },
      "object arrays");
  expectUserError(
      [&] { parseNpy(withDict("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }"), "f.npy"); },
      "unsupported .npy dtype '<c8'");
  expectUserError(
      [&] { parseNpy(withDict("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }"), "f.npy"); },
      "structured");
  expectUserError([&] { parseNpy(withDict("{'descr': '<f4', 'shape': (6,), }"), "f.npy"); },
                  "needs 'descr', 'fortran_order' and 'shape'");
  expectUserError([&] { parseNpy(withDict("{'descr': '<f4, 'fortran_order': False"), "f.npy"); },
                  "malformed .npy header");
  expectUserError(
      [&] { parseNpy(withDict("{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3), }"), "f.npy"); },
      "malformed .npy header");
  // A header that claims far more data than the file has must not allocate it.
  expectUserError(
      [&] {
        parseNpy(withDict("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000, 1000000000), }"),
                 "f.npy");
      },
      "truncated");
  expectUserError(
      [&] {
        parseNpy(withDict("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999, 99999999999), }"),
                 "f.npy");
      },
      "too large");
  // Big-endian one-byte types are fine: byte order does not apply.
  EXPECT_EQ(parseNpy(withDict("{'descr': '>u1', 'fortran_order': False, 'shape': (24,), }"), "f.npy")
                .dtype(),
            DType::Uint8);
  expectUserError([] { readNpy("/nonexistent/dir/x.npy"); }, "/nonexistent/dir/x.npy");
}

TEST(Npz, MalformedArchivesAreUserErrors) {
  std::string good = serializeNpz({{"a", makeTensor(DType::Float32, {4})},
                                   {"b", makeTensor(DType::Int32, {2, 2})}});
  ASSERT_EQ(parseNpz(good, "f.npz").size(), 2u);
  expectUserError([] { parseNpz("", "f.npz"); }, "f.npz: malformed .npz archive");
  expectUserError([] { parseNpz(std::string(100, 'x'), "f.npz"); }, "no end-of-central-directory");

  size_t end = good.size() - 22;
  auto patched = [&](size_t offset, uint32_t value, int width) {
    std::string copy = good;
    for (int i = 0; i < width; ++i)
      copy[offset + i] = static_cast<char>((value >> (8 * i)) & 0xff);
    return copy;
  };
  expectUserError([&] { parseNpz(patched(end + 16, 0x7fffffff, 4), "f.npz"); }, "central directory");
  expectUserError([&] { parseNpz(patched(end + 10, 5, 2), "f.npz"); }, "ends after 2 of 5");
  size_t central = good.size() - 22 - (2 * 46 + 2 * 5); // two entries named "a.npy", "b.npy"
  expectUserError([&] { parseNpz(patched(central + 42, 0x100000, 4), "f.npz"); },
                  "points at no local header");
  expectUserError([&] { parseNpz(patched(central + 20, 0x100000, 4), "f.npz"); }, "entry data");
  expectUserError([&] { parseNpz(patched(central + 16, 0x12345678, 4), "f.npz"); }, "CRC32");
  expectUserError([&] { parseNpz(patched(central + 10, 12, 2), "f.npz"); }, "compression method 12");
  std::string corrupt = good;
  corrupt[30 + 5 + 64 + 1] ^= 0x55; // a data byte of entry "a" (after its 64-byte npy header)
  expectUserError([&] { parseNpz(corrupt, "f.npz"); }, "CRC32 mismatch in entry 'a.npy'");
}

TEST(Npz, EveryTruncationAndByteFlipIsHandled) {
  std::string good = serializeNpz({{"a", makeTensor(DType::Float32, {3})},
                                   {"b", makeTensor(DType::Uint8, {5})}});
  for (size_t length = 0; length < good.size(); ++length)
    EXPECT_THROW(parseNpz(good.substr(0, length), "f.npz"), UserError) << "length " << length;
  // Any one-byte change either still parses (e.g. inside padding) or is a UserError.
  for (size_t offset = 0; offset < good.size(); ++offset) {
    std::string copy = good;
    copy[offset] ^= 0xff;
    try {
      parseNpz(copy, "f.npz");
    } catch (const UserError &) {
    }
  }
}
