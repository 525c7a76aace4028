// How a tensor-core kernel's operands reach shared memory, for both instruction families
// (cuda_mma_body.h): the form each operand takes, the place of a slice's elements, and the code
// that requests a slice.
#include "cuda_mma_body.h"

#include <tuple>

namespace sinter::codegen::cuda {

namespace {

/// The load behind an operand that is copied as it is stored: `cast<f32>(load)` of the 16-bit
/// type `stored`, or a float32 `load` when `stored` is f32; when its runs of `run` elements
/// along `variable` (whose extent is `extent`) are contiguous and 16-byte aligned; null
/// otherwise.
const Expr *vectorLoad(const ExprRef &value, DType stored, int run, int variable, int64_t extent) {
  if (extent % run != 0)
    return nullptr;
  const Expr *load = value.get();
  if (stored != DType::Float32) {
    if (value->kind != ExprKind::Cast)
      return nullptr;
    load = value->operands[0].get();
  }
  if (load->kind != ExprKind::Load || load->type != stored)
    return nullptr;
  return runForm(load->operands[0], variable, run) == RunForm::Unit ? load : nullptr;
}

/// The float32 load behind an operand `cast<f32>(cast<half>(load))` whose runs of eight along
/// `variable` are contiguous and 32-byte aligned; null otherwise.
const Expr *narrowedLoad(const ExprRef &value, DType half, int variable, int64_t extent) {
  if (value->kind != ExprKind::Cast)
    return nullptr;
  const ExprRef &rounded = value->operands[0];
  if (rounded->kind != ExprKind::Cast || rounded->type != half)
    return nullptr;
  return vectorLoad(rounded->operands[0], DType::Float32, 8, variable, extent);
}

/// How an operand reaches shared memory (cuda_mma_contraction.cpp's header lists the forms), and
/// the load it copies or narrows (null for a scalar operand).
std::pair<Staging, const Expr *> operandStaging(const ExprRef &value, bool rhs, const ContractionSpec &spec,
                                                const MmaFormat &format) {
  if (const Expr *load = vectorLoad(value, format.stored, format.run(), spec.r, spec.k))
    return {Staging::VectorK, load};
  if (!format.tf32())
    if (const Expr *load = narrowedLoad(value, format.stored, spec.r, spec.k))
      return {Staging::NarrowedK, load};
  if (rhs)
    if (const Expr *load = vectorLoad(value, format.stored, format.run(), spec.j, spec.n))
      return {Staging::VectorMN, load};
  return {Staging::Scalar, nullptr};
}

/// The window of a convolution whose rhs reads its input directly, when every index of the window
/// gather fits in 32 bits; nullopt otherwise.
std::optional<DepthwiseWindow> gatheredWindow(const Contraction &contraction) {
  std::optional<DepthwiseWindow> window = groupedWindow(contraction);
  if (!window)
    return std::nullopt;
  const PlaneGeometry plane = planeGeometry(window->geometry);
  const int64_t span = (window->images - 1) * window->imageStride + (window->channels - 1) * window->planeStride +
                       (window->channelsPerGroup - 1) * window->channelStride + plane.inRows * plane.inColumns;
  const int64_t limit = int64_t(1) << 30;
  if (span >= limit || contraction.spec.n >= limit || contraction.spec.k >= limit || window->imageStride >= limit)
    return std::nullopt;
  return window;
}

const char *stagingName(Staging s) {
  switch (s) {
  case Staging::VectorK: return "vector along k";
  case Staging::VectorMN: return "vector along n";
  case Staging::NarrowedK: return "narrowed vector along k";
  case Staging::Scalar: break;
  }
  return "scalar";
}

} // namespace

const Expr *runLoad(const ExprRef &value, DType stored, int run, int variable, int64_t extent) {
  return vectorLoad(value, stored, run, variable, extent);
}

void printRingPrologue(std::ostringstream &out, int slices, int64_t kTiles, int bk, const SliceRequest &request) {
  out << "  for (int t = 0; t < " << slices << "; ++t) {\n";
  out << "    if (t < " << kTiles << "LL) {\n      const long long k0 = (long long)t * " << bk << ";\n";
  request("t", "k0", "      ");
  out << "    }\n    sn_cp_async_commit<0>();\n  }\n";
}

void printRangeRingPrologue(std::ostringstream &out, int slices, int stages, int bk, const SliceRequest &request) {
  out << "  for (int s = 0; s < " << slices << "; ++s) {\n    const int t = kBegin + s;\n";
  out << "    if (t < kEnd) {\n      const long long k0 = (long long)t * " << bk << ";\n";
  request("(t % " + std::to_string(stages) + ")", "k0", "      ");
  out << "    }\n    sn_cp_async_commit<0>();\n  }\n";
}

SliceStaging::SliceStaging(std::ostringstream &out, CudaPrinter &printer, const Contraction &contraction,
                           const MmaFormat &format, const MmaTile &tile, bool swizzled, bool ranged)
    : out_(out), printer_(printer), spec_(contraction.spec), format_(format), tile_(tile), swizzled_(swizzled),
      ranged_(ranged), threads_(tile.threads()), run_(format.run()),
      toHalf_(format.stored == DType::Float16 ? "sn_f2h" : "sn_f2bf"),
      // wgmma slices: k-major rows of 128 bytes (64 16-bit steps), the 16-byte chunk c of row r
      // at chunk c ^ (r % 8); a vector along n as 64-column atoms of 64 rows of k, likewise
      // swizzled.
      aBytes_(int64_t(tile.bm) * tile.bk * format.bytes),
      stageBytes_(aBytes_ + int64_t(tile.bn) * tile.bk * format.bytes), kTiles_(ceilDiv(spec_.k, tile.bk)),
      operands_{{"lhs", "sA", "ra", "rowBase", tile.bm, spec_.i, spec_.lhsUnitStrideK, spec_.m, spec_.lhs},
                {"rhs", "sB", "rb", "columnBase", tile.bn, spec_.j, spec_.rhsUnitStrideK, spec_.n, spec_.rhs}} {
  const Kernel &kernel = contraction.kernel;
  for (StagedOperand &o : operands_) {
    std::tie(o.staging, o.load) = operandStaging(o.value, &o == &operands_[1], spec_, format_);
    // A slice is k-contiguous rows with a run of padding (a row is 20 words for 32 bytes of
    // reduction, so the eight rows a fragment read touches start in eight different bank
    // quads), or for a vector along n, n-contiguous rows (16-bit: read by ldmatrix.trans, padded
    // by a run likewise; f32: padded by 8 words, so a fragment's four steps of eight columns
    // fall in 32 different banks).
    if ((o.staging == Staging::VectorK || o.staging == Staging::VectorMN) && spec_.k % tile_.bk == 0)
      if (std::optional<int64_t> stride =
              sliceStride(o.load->operands[0], spec_.r, tile_.bk, kTiles_, kernel, *printer_.ranges())) {
        o.walked = true;
        o.sliceStride = *stride;
      }
    // A convolution's window read directly is a window gather; another scalar operand may be
    // strided gathers.
    if (&o == &operands_[1] && o.staging == Staging::Scalar && !o.unitStrideK && threads_ % o.extent == 0)
      o.window = gatheredWindow(contraction);
    if (o.staging == Staging::Scalar && !o.window && runLength(o) > 1 && spec_.k % runLength(o) == 0)
      o.strided = stridedGather(o.value, format_.stored, spec_.r, runLength(o));
    if (o.staging == Staging::VectorMN) {
      o.rows = tile_.bk;
      o.rowLength = o.extent + 8;
    } else {
      o.rows = o.extent;
      o.rowLength = tile_.bk + run_;
    }
  }
}

// A scalar operand's run: reduction steps of one row (lhs) or column (rhs) that a thread
// evaluates into registers and stores at once (see the scalar staging below).
int SliceStaging::runLength(const StagedOperand &o) const {
  return o.unitStrideK ? (format_.tf32() ? 1 : 2) : run_;
}

std::string SliceStaging::describe(const StagedOperand &o) const {
  if (o.window)
    return "window gather";
  return o.strided ? "strided gather of " + std::to_string(runLength(o)) + " steps " +
                         std::to_string(o.strided->stride) + " apart"
                   : std::string(stagingName(o.staging));
}

// Where element (row, column) of an operand's slice `stage` is: k-contiguous rows (row, k), or
// for a vector along n, (k, n).
std::string SliceStaging::place(const StagedOperand &o, const std::string &stage, const std::string &row,
                                const std::string &column) const {
  if (!swizzled_)
    return "&" + std::string(o.shared) + "[" + stage + "][" + row + "][" + column + "]";
  std::string origin = "slices + (" + stage + ") * " + std::to_string(stageBytes_) +
                       (&o == &operands_[1] ? " + " + std::to_string(aBytes_) : "");
  std::string at;
  if (o.staging == Staging::VectorMN)
    at = origin + " + ((" + column + ") >> 6) * " + std::to_string(tile_.bk * 128) + " + (" + row + ") * 128 + (((((" +
         column + ") >> 3) & 7) ^ ((" + row + ") & 7)) << 4) + ((" + column + ") & 7) * 2";
  else
    at = origin + " + (" + row + ") * 128 + ((((" + column + ") >> 3) ^ ((" + row + ") & 7)) << 4) + ((" + column +
         ") & 7) * 2";
  return "reinterpret_cast<" + std::string(format_.element) + " *>(" + at + ")";
}

// Vector operands: each thread copies whole runs; a run is inside the matrix or wholly
// outside it (the extent along the run is a multiple of it), and outside is zero-filled.
// A slice's runs are dealt to the threads in turn; where they do not divide evenly (a 96-row
// tile), the threads past the last run skip their final turn.
void SliceStaging::runIndex(int runs, const std::string &indent) {
  out_ << indent << "const int e = tid + u * " << threads_ << ";\n";
  if (runs % threads_ != 0)
    out_ << indent << "if (e >= " << runs << ") break;\n";
}

// Where run u of a thread starts in a slice of k-contiguous rows (copied or narrowed).
void SliceStaging::runPositionK(const StagedOperand &o, const std::string &indent) {
  runIndex(vectorRunCount(o), indent);
  out_ << indent << "const int kk = (e % " << tile_.bk / run_ << ") * " << run_ << ", ii = e / " << tile_.bk / run_
       << ";\n";
}

// The bytes between one slice of an operand and the next in shared memory.
int64_t SliceStaging::stageStride(const StagedOperand &o) const {
  return swizzled_ ? stageBytes_ : int64_t(o.rows) * o.rowLength * format_.bytes;
}

// Where run u of a copied operand is: its row ii (along k) or column jj (along n) in the tile,
// and its reduction step kk in the slice.
void SliceStaging::vectorPosition(const StagedOperand &o, const std::string &indent) {
  if (o.staging == Staging::VectorK) {
    runPositionK(o, indent);
  } else {
    runIndex(vectorRunCount(o), indent);
    out_ << indent << "const int jj = (e % " << o.extent / run_ << ") * " << run_ << ", kk = e / " << o.extent / run_
         << ";\n";
  }
}

void SliceStaging::walkSetups() {
  for (const StagedOperand &o : operands_)
    if (o.walked)
      walkSetup(o);
    else if (o.window)
      windowSetup(o);
}

// A walked operand's runs, before the first request: the source at the first slice (a run
// past the matrix's edge reads its last row or column, with a zero-filling copy), and the
// shared-memory address in slice 0.
void SliceStaging::walkSetup(const StagedOperand &o) {
  const bool alongK = o.staging == Staging::VectorK;
  const std::string within = std::string(o.base) + " + " + (alongK ? "ii" : "jj");
  const std::string limit = std::to_string(o.limit) + "LL";
  out_ << "  const " << cudaStorageType(o.load->type) << " *" << o.name << "Source[" << vectorRuns(o) << "];\n";
  out_ << "  unsigned " << o.name << "Place[" << vectorRuns(o) << "];\n";
  if (ragged(o))
    out_ << "  bool " << o.name << "Inside[" << vectorRuns(o) << "];\n";
  out_ << "#pragma unroll\n  for (int u = 0; u < " << vectorRuns(o) << "; ++u) {\n";
  vectorPosition(o, "    ");
  if (ragged(o)) {
    out_ << "    " << o.name << "Inside[u] = " << within << " < " << limit << ";\n";
    out_ << "    " << v(o.indexVar) << " = " << o.name << "Inside[u] ? " << within << " : " << limit << " - 1;\n";
  } else {
    out_ << "    " << v(o.indexVar) << " = " << within << ";\n";
  }
  out_ << "    " << v(spec_.r) << " = "
       << (ranged_ ? "(long long)kBegin * " + std::to_string(tile_.bk) + " + kk" : "kk") << ";\n";
  CudaPrinter::Line index = printer_.line({o.load->operands[0]}, "    ");
  out_ << index.definitions << "    " << o.name << "Source[u] = b" << o.load->id << " + " << index.texts[0] << ";\n";
  out_ << "    " << o.name << "Place[u] = sn_shared_address("
       << (alongK ? place(o, "0", "ii", "kk") : place(o, "0", "kk", "jj")) << ");\n";
  out_ << "  }\n";
}

void SliceStaging::issueVector(const StagedOperand &o, const std::string &stage, const char *k,
                               const std::string &indent) {
  out_ << indent << "#pragma unroll\n" << indent << "for (int u = 0; u < " << vectorRuns(o) << "; ++u) {\n";
  if (o.walked) {
    if (vectorRunCount(o) % threads_ != 0)
      out_ << indent << "  if (tid + u * " << threads_ << " >= " << vectorRunCount(o) << ") break;\n";
    out_ << indent << "  sn_cp_async16_at(" << o.name << "Place[u] + (" << stage << ") * " << stageStride(o) << ", "
         << o.name << "Source[u], " << (ragged(o) ? std::string(o.name) + "Inside[u]" : "true") << ");\n";
    out_ << indent << "  " << o.name << "Source[u] += " << o.sliceStride << ";\n";
    out_ << indent << "}\n";
    return;
  }
  // The run's row (or column) within the tile: ii along k, jj along n.
  const bool alongK = o.staging == Staging::VectorK;
  const char *within = alongK ? "ii" : "jj";
  vectorPosition(o, indent + "  ");
  out_ << indent << "  " << v(o.indexVar) << " = " << o.base << " + " << within << "; " << v(spec_.r) << " = " << k
       << " + kk;\n";
  out_ << indent << "  const bool valid = " << v(o.indexVar) << " < " << o.limit << "LL && " << v(spec_.r) << " < "
       << spec_.k << "LL;\n";
  CudaPrinter::Line index = printer_.line({o.load->operands[0]}, indent + "  ", true);
  out_ << index.definitions << indent << "  sn_cp_async16("
       << (alongK ? place(o, stage, "ii", "kk") : place(o, stage, "kk", "jj")) << ", valid ? b" << o.load->id << " + "
       << index.texts[0] << " : b" << o.load->id << ", valid);\n";
  out_ << indent << "}\n";
}

// Scalar operands: each thread evaluates runs of `length` consecutive reduction steps of one
// row (lhs) or column (rhs) into registers, and stores a run at once. An operand whose
// reduction index is its unit stride takes short runs (consecutive threads read consecutive
// addresses): pairs of 16-bit values packed in a word, or single f32; the other takes 16-byte
// runs (consecutive threads read consecutive rows of one step) whose stores land in a
// different bank quad for each of eight adjacent rows. The registers hold the values as read
// (16-bit patterns, or f32 to narrow when stored), so that no conversion waits on a load
// before the next load is issued.
bool SliceStaging::readsBits(const StagedOperand &o) const {
  if (o.window) {
    const DepthwiseWindow &w = *o.window;
    return !format_.tf32() && w.read->kind == ExprKind::Cast && w.read->operands[0] == w.load &&
           w.stored == format_.stored;
  }
  if (o.strided)
    return !format_.tf32() && o.strided->load->type == format_.stored;
  return !format_.tf32() && o.value->kind == ExprKind::Cast && o.value->operands[0]->type == format_.stored;
}

void SliceStaging::runPosition(const StagedOperand &o, const std::string &indent) {
  int length = runLength(o), perRow = tile_.bk / length;
  runIndex(scalarRunCount(o), indent);
  if (o.unitStrideK)
    out_ << indent << "const int kk = (e % " << perRow << ") * " << length << ", ii = e / " << perRow << ";\n";
  else
    out_ << indent << "const int kk = (e / " << o.extent << ") * " << length << ", ii = e % " << o.extent << ";\n";
}

// A strided gather's run: its test and address once, then `length` loads at fixed offsets.
void SliceStaging::loadStrided(const StagedOperand &o, const char *k, const std::string &indent) {
  int length = runLength(o);
  const StridedGather &gather = *o.strided;
  out_ << indent << "#pragma unroll\n" << indent << "for (int u = 0; u < " << scalarRuns(o) << "; ++u) {\n";
  runPosition(o, indent + "  ");
  out_ << indent << "  " << v(o.indexVar) << " = " << o.base << " + ii; " << v(spec_.r) << " = " << k << " + kk;\n";
  // The test runs only inside the bounds; the address is computed either way.
  CudaPrinter::Line test = gather.test ? printer_.line({gather.test}, indent + "  ", true) : CudaPrinter::Line{};
  CudaPrinter::Line index = printer_.line({gather.load->operands[0]}, indent + "  ");
  out_ << test.definitions << indent << "  const bool fill = " << v(o.indexVar) << " < " << o.limit << "LL && "
       << v(spec_.r) << " < " << spec_.k << "LL" << (gather.test ? " && " + test.texts[0] : std::string()) << ";\n";
  out_ << index.definitions << indent << "  const " << cudaStorageType(gather.load->type) << " *from = b"
       << gather.load->id << " + " << index.texts[0] << ";\n";
  out_ << indent << "#pragma unroll\n" << indent << "  for (int s = 0; s < " << length << "; ++s)\n";
  out_ << indent << "    " << o.registers << "[u * " << length << " + s] = fill ? from[s * " << gather.stride
       << "LL] : 0;\n";
  out_ << indent << "}\n";
}

// A window gather's column: the staging deals a slice's runs to the threads so that a thread's
// runs are all of one column, tid % extent (runs of k-steps of one column, consecutive threads
// on consecutive columns; the gather is taken only where the threads are a multiple of the
// extent), so the column's image, window origin and offset in X are computed once a tile. A
// column past the matrix's last gets an origin row far above the plane, so that each of its
// elements fails the bounds test with no test of its own.
void SliceStaging::windowSetup(const StagedOperand &o) {
  const DepthwiseWindow &w = *o.window;
  const PlaneGeometry plane = planeGeometry(w.geometry);
  const std::string name = o.name;
  out_ << "  int " << name << "Origin, " << name << "Top, " << name << "Left;\n";
  out_ << "  {\n    const int j = (int)" << o.base << " + tid % " << o.extent << ";\n";
  out_ << "    const bool inside = j < " << o.limit << ";\n";
  out_ << "    const int column = inside ? j : 0, image = column / " << w.positions() << ", p = column % "
       << w.positions() << ";\n";
  out_ << "    const int top = (p / " << plane.outColumns << ") * " << plane.strideRows << " - " << plane.padTop
       << ", left = (p % " << plane.outColumns << ") * " << plane.strideColumns << " - " << plane.padLeft << ";\n";
  out_ << "    " << name << "Origin = image * " << w.imageStride;
  if (w.channels > 1)
    out_ << " + (int)" << v(spec_.b) << " * " << w.planeStride;
  out_ << " + top * " << plane.inColumns << " + left;\n";
  out_ << "    " << name << "Top = inside ? top : -(1 << 30);\n";
  out_ << "    " << name << "Left = left;\n";
  out_ << "  }\n";
}

// A window gather's elements: reduction step r is input plane c at tap t (the reduction order
// of conv_layout.h); the element is X[origin + c * plane + dy * W + dx] where the tap's row and
// column (origin row + dy, origin column + dx) are inside the plane, else 0. With the channels
// innermost and a run of steps that starts at a multiple of a channel count it divides, the
// run is one tap of consecutive planes: its test and address once, the elements a plane apart.
void SliceStaging::loadWindow(const StagedOperand &o, const char *k, const std::string &indent) {
  const DepthwiseWindow &w = *o.window;
  const PlaneGeometry plane = planeGeometry(w.geometry);
  const int length = runLength(o);
  const int64_t channels = w.channelsPerGroup, taps = w.taps(), planeSize = w.channelStride;
  const bool oneTap = w.channelsInnermost && length > 1 && channels % length == 0;
  const std::string name = o.name, source = "b" + std::to_string(w.load->id);
  // The element as the registers hold it: its bits; an f32 input that the read rounds to the
  // slice's type as it is (the slice's store rounds it the same way); else the read widened.
  const bool roundedOnStore = !format_.tf32() && w.stored == DType::Float32 && w.read->kind == ExprKind::Cast &&
                              w.read->operands[0]->kind == ExprKind::Cast &&
                              w.read->operands[0]->type == format_.stored && w.read->operands[0]->operands[0] == w.load;
  auto read = [&](const std::string &at, const std::string &base) {
    const std::string element = base + "[" + at + "]";
    return readsBits(o) || roundedOnStore ? element : printer_.exprReading(w.read, w.load.get(), element);
  };
  const std::string zero = readsBits(o) ? "0" : "0.f";
  // The tap's displacement (dy, dx) and the test of the step's element.
  auto tap = [&](const std::string &t, const std::string &r, const std::string &pad) {
    out_ << pad << "const int dy = " << t << " / " << plane.kernelColumns << " * " << plane.dilationRows
         << ", dx = " << t << " % " << plane.kernelColumns << " * " << plane.dilationColumns << ";\n";
    out_ << pad << "const bool fill = " << r << " < " << spec_.k << " && (unsigned)(" << name << "Top + dy) < "
         << plane.inRows << "u && (unsigned)(" << name << "Left + dx) < " << plane.inColumns << "u;\n";
  };
  out_ << indent << "#pragma unroll\n" << indent << "for (int u = 0; u < " << scalarRuns(o) << "; ++u) {\n";
  runPosition(o, indent + "  ");
  const std::string pad = indent + "  ";
  if (oneTap) {
    out_ << pad << "const int r = (int)" << k << " + kk, c = r % " << channels << ";\n";
    tap("(r / " + std::to_string(channels) + ")", "r", pad);
    // One address, the run's elements at constant offsets from it (immediates of the loads).
    out_ << pad << "const " << cudaStorageType(w.stored) << " *from = " << source << " + (" << name << "Origin + c * "
         << planeSize << " + dy * " << plane.inColumns << " + dx);\n";
    out_ << pad << "#pragma unroll\n" << pad << "for (int s = 0; s < " << length << "; ++s)\n";
    out_ << pad << "  " << o.registers << "[u * " << length << " + s] = fill ? "
         << read("s * " + std::to_string(planeSize), "from") << " : " << zero << ";\n";
  } else {
    out_ << pad << "#pragma unroll\n" << pad << "for (int s = 0; s < " << length << "; ++s) {\n";
    const std::string inner = pad + "  ";
    out_ << inner << "const int r = (int)" << k << " + kk + s;\n";
    if (channels == 1)
      out_ << inner << "const int c = 0, tap = r;\n";
    else if (w.channelsInnermost)
      out_ << inner << "const int c = r % " << channels << ", tap = r / " << channels << ";\n";
    else
      out_ << inner << "const int c = r / " << taps << ", tap = r % " << taps << ";\n";
    tap("tap", "r", inner);
    out_ << inner << o.registers << "[u * " << length << " + s] = fill ? "
         << read(name + "Origin + c * " + std::to_string(planeSize) + " + dy * " +
                 std::to_string(plane.inColumns) + " + dx",
                 source)
         << " : " << zero << ";\n";
    out_ << pad << "}\n";
  }
  out_ << indent << "}\n";
}

void SliceStaging::loadScalar(const StagedOperand &o, const char *k, const std::string &indent) {
  if (o.window)
    return loadWindow(o, k, indent);
  if (o.strided)
    return loadStrided(o, k, indent);
  int length = runLength(o);
  CudaPrinter::Line value =
      printer_.line({readsBits(o) ? o.value->operands[0] : o.value}, indent + "    ", true);
  out_ << indent << "#pragma unroll\n" << indent << "for (int u = 0; u < " << scalarRuns(o) << "; ++u) {\n";
  runPosition(o, indent + "  ");
  out_ << indent << "  " << v(o.indexVar) << " = " << o.base << " + ii;\n";
  out_ << indent << "#pragma unroll\n" << indent << "  for (int s = 0; s < " << length << "; ++s) {\n";
  out_ << indent << "    " << v(spec_.r) << " = " << k << " + kk + s;\n";
  out_ << value.definitions << indent << "    " << o.registers << "[u * " << length << " + s] = (" << v(o.indexVar)
       << " < " << o.limit << "LL && " << v(spec_.r) << " < " << spec_.k << "LL) ? " << value.texts[0] << " : 0;\n";
  out_ << indent << "  }\n" << indent << "}\n";
}

void SliceStaging::storeScalar(const StagedOperand &o, const std::string &stage, const std::string &indent) {
  int length = runLength(o);
  auto element = [&](int s) {
    return o.registers + std::string("[u * ") + std::to_string(length) + " + " + std::to_string(s) + "]";
  };
  auto bits = [&](const std::string &element) {
    return readsBits(o) ? "(unsigned)" + element : "(unsigned)" + std::string(toHalf_) + "(" + element + ")";
  };
  auto word = [&](int w) { return "(" + bits(element(2 * w)) + " | (" + bits(element(2 * w + 1)) + " << 16))"; };
  out_ << indent << "#pragma unroll\n" << indent << "for (int u = 0; u < " << scalarRuns(o) << "; ++u) {\n";
  runPosition(o, indent + "  ");
  std::string at = place(o, stage, "ii", "kk");
  if (format_.tf32() && length == 1)
    out_ << indent << "  " << o.shared << "[" << stage << "][ii][kk] = " << element(0) << ";\n";
  else if (format_.tf32())
    out_ << indent << "  *reinterpret_cast<float4 *>(" << at << ") = float4{" << element(0) << ", " << element(1)
         << ", " << element(2) << ", " << element(3) << "};\n";
  else if (length == 2)
    out_ << indent << "  *reinterpret_cast<unsigned *>(" << at << ") = " << word(0) << ";\n";
  else
    out_ << indent << "  *reinterpret_cast<uint4 *>(" << at << ") = uint4{" << word(0) << ", " << word(1) << ", "
         << word(2) << ", " << word(3) << "};\n";
  out_ << indent << "}\n";
}

// Narrowed vectors: the same runs as a vector along k, read as two float4 into registers and
// rounded when stored (cvt.rn, as the expression's cast does).
void SliceStaging::loadNarrowed(const StagedOperand &o, const char *k, const std::string &indent) {
  out_ << indent << "#pragma unroll\n" << indent << "for (int u = 0; u < " << vectorRuns(o) << "; ++u) {\n";
  runPositionK(o, indent + "  ");
  out_ << indent << "  " << v(o.indexVar) << " = " << o.base << " + ii; " << v(spec_.r) << " = " << k << " + kk;\n";
  out_ << indent << "  if (" << v(o.indexVar) << " < " << o.limit << "LL && " << v(spec_.r) << " < " << spec_.k
       << "LL) {\n";
  CudaPrinter::Line index = printer_.line({o.load->operands[0]}, indent + "    ");
  out_ << index.definitions << indent << "    const float4 *run = reinterpret_cast<const float4 *>(b" << o.load->id
       << " + " << index.texts[0] << ");\n";
  out_ << indent << "    " << o.registers << "[2 * u] = run[0]; " << o.registers << "[2 * u + 1] = run[1];\n";
  out_ << indent << "  } else {\n";
  out_ << indent << "    " << o.registers << "[2 * u] = " << o.registers
       << "[2 * u + 1] = float4{0.f, 0.f, 0.f, 0.f};\n";
  out_ << indent << "  }\n" << indent << "}\n";
}

void SliceStaging::storeNarrowed(const StagedOperand &o, const std::string &stage, const std::string &indent) {
  auto pair = [&](const std::string &low, const std::string &high) { return packedHalves(toHalf_, low, high); };
  std::string first = std::string(o.registers) + "[2 * u]", second = std::string(o.registers) + "[2 * u + 1]";
  out_ << indent << "#pragma unroll\n" << indent << "for (int u = 0; u < " << vectorRuns(o) << "; ++u) {\n";
  runPositionK(o, indent + "  ");
  out_ << indent << "  *reinterpret_cast<uint4 *>(" << place(o, stage, "ii", "kk") << ") = uint4{"
       << pair(first + ".x", first + ".y") << ", " << pair(first + ".z", first + ".w") << ", "
       << pair(second + ".x", second + ".y") << ", " << pair(second + ".z", second + ".w") << "};\n";
  out_ << indent << "}\n";
}

void SliceStaging::declareRegisters() {
  for (const StagedOperand &o : operands_)
    if (o.staging == Staging::Scalar)
      out_ << "  " << (readsBits(o) ? "unsigned short" : "float") << " " << o.registers << "["
           << scalarRuns(o) * runLength(o) << "];\n";
  for (const StagedOperand &o : operands_)
    if (o.staging == Staging::NarrowedK)
      out_ << "  float4 " << o.registers << "[" << 2 * vectorRuns(o) << "];\n";
}

void SliceStaging::storeStaged(const StagedOperand &o, const std::string &stage, const std::string &indent) {
  if (o.staging == Staging::NarrowedK)
    storeNarrowed(o, stage, indent);
  else
    storeScalar(o, stage, indent);
}

void SliceStaging::issue(const std::string &stage, const char *k, const std::string &indent) {
  for (const StagedOperand &o : operands_)
    if (o.staging == Staging::Scalar)
      loadScalar(o, k, indent);
    else if (o.staging == Staging::NarrowedK)
      loadNarrowed(o, k, indent);
    else
      issueVector(o, stage, k, indent);
}

void SliceStaging::request(const std::string &stage, const char *k, const std::string &indent) {
  issue(stage, k, indent);
  for (const StagedOperand &o : operands_)
    if (registerStaged(o))
      storeStaged(o, stage, indent);
}

} // namespace sinter::codegen::cuda
