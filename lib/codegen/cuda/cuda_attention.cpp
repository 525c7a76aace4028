// The fused attention kernel: a block of four warps takes 64 queries of one head, each warp 16 of
// them, and walks the head's keys 64 at a time (docs/attention.md):
//   1. the block copies the 64 x D queries into shared memory once, and each warp keeps its
//      rows as m16n8k16 A fragments in registers;
//   2. per step, the block has 64 keys and 64 values in shared memory (copied while it worked on
//      the step before, two buffers of each; the first two steps are requested together); each warp
//      multiplies its queries by the keys (S, 16 x 64, f32 sums in registers), with a mask
//      scales them and adds it (without one the scale goes into the exponentials' argument),
//      and updates its rows' running maximum and sum of exponentials (the online softmax),
//      rescaling its output sums when the maximum grows;
//   3. the exponentials, rounded to the operand type, are the A fragments of P.V directly (the
//      sums' fragment layout is the operand's), and the values' B fragments come from
//      ldmatrix.trans;
//   4. at the end each output is its sum times the reciprocal of the row's sum of
//      exponentials, stored through the group's epilogue.
// The scores never leave registers. Keys past the end count as -inf; a row whose every key is
// -inf has output 0, as the generic rule (lower_attention.cpp) gives.
// Q, K and V are read through their expressions: 16-byte runs along the head dimension are
// copied by cp.async (a head split read back through reshapes and transposes is affine once
// IndexRanges::simplify has taken out its divisions); anything else is evaluated element by
// element and rounded (exactly: fusedAttentionOperands checks they are 16-bit values).
#include "cuda_attention.h"

#include "../lowering/lowering_rules.h"

#include "cuda_contraction.h"
#include "cuda_source.h"

#include "sinter/codegen/kernel/index_ranges.h"
#include "sinter/support/error.h"

#include <sstream>

namespace sinter::codegen::cuda {
namespace {

constexpr int kQueries = 64; ///< queries a block (16 a warp)
constexpr int kKeys = 64;    ///< keys a step
constexpr int kThreads = 128;
static_assert(kQueries == kKeys, "loadTile copies tiles of one height for queries, keys and values");
/// Buffers of keys and values: the block copies step t + 1 while it multiplies step t. (Three
/// buffers, copying two steps ahead, took ViT-B/16 b32's attention from 0.553 to 0.613 ms: 64.5
/// KiB of shared memory a block leaves three blocks an SM instead of four.)
constexpr int kBuffers = 2;

/// The 16-bit type every value of `e` is exactly: a widening cast of a 16-bit value.
std::optional<DType> sixteenBitSource(const ExprRef &e) {
  if (e->kind == ExprKind::Cast && (e->operands[0]->type == DType::Float16 || e->operands[0]->type == DType::BFloat16))
    return e->operands[0]->type;
  return std::nullopt;
}

} // namespace

std::optional<DType> fusedAttentionOperands(const AttentionSpec &spec) {
  if (spec.d % 16 != 0 || spec.dv % 16 != 0 || spec.d > 128 || spec.dv > 128)
    return std::nullopt;
  // Positions are ints in the kernel; heads are the grid's y.
  if (spec.batch > 65535 || spec.lq > (1 << 30) || spec.lk > (1 << 30))
    return std::nullopt;
  std::optional<DType> q = sixteenBitSource(spec.query), k = sixteenBitSource(spec.key),
                       v = sixteenBitSource(spec.value);
  if (!q || q != k || q != v)
    return std::nullopt;
  return q;
}

std::string printFusedAttention(const FusedAttention &original, DType operands, LaunchShape &launch) {
  CudaPrinter printer;
  IndexRanges ranges(original.kernel);
  const AttentionSpec &given = original.spec;
  ranges.setVariable(given.b, {0, given.batch - 1});
  ranges.setVariable(given.i, {0, given.lq - 1});
  ranges.setVariable(given.j, {0, given.lk - 1});
  ranges.setVariable(given.c, {0, std::max(given.d, given.dv) - 1});
  printer.setRanges(&ranges);
  AttentionSpec spec = given;
  spec.query = ranges.simplify(given.query);
  spec.key = ranges.simplify(given.key);
  spec.value = ranges.simplify(given.value);
  if (spec.mask)
    spec.mask = ranges.simplify(given.mask);
  const Kernel &kernel = original.kernel;
  const bool bf16 = operands == DType::BFloat16;
  const char *toHalf = bf16 ? "sn_f2bf" : "sn_f2h";
  auto v = [](int id) { return "v" + std::to_string(id); };
  const int64_t qRow = spec.d + 8, vRow = spec.dv + 8; // rows padded by 16 bytes

  std::ostringstream out;
  // Four blocks an SM at least (128 registers a thread) when the output sums fit: with no cap the
  // compiler is free to take more and leave the SM two blocks.
  out << CudaPrinter::signature(kernel, kThreads, spec.dv <= 64 ? 4 : 2);
  out << "  // fused attention (" << (bf16 ? "bf16" : "f16") << " operands, f32 scores, softmax and sums): " << spec.batch
      << " heads of " << spec.lq << " queries and " << spec.lk << " keys, head size " << spec.d << ", value size "
      << spec.dv << "; " << kQueries << " queries a block, " << kKeys << " keys a step\n";
  out << "  extern __shared__ __align__(16) unsigned short sn_shared[];\n";
  out << "  unsigned short (*sQ)[" << qRow << "] = reinterpret_cast<unsigned short (*)[" << qRow << "]>(sn_shared);\n";
  out << "  unsigned short (*sK)[" << kKeys << "][" << qRow << "] = reinterpret_cast<unsigned short (*)[" << kKeys << "]["
      << qRow << "]>(sn_shared + " << kQueries * qRow << ");\n";
  out << "  unsigned short (*sV)[" << kKeys << "][" << vRow << "] = reinterpret_cast<unsigned short (*)[" << kKeys << "]["
      << vRow << "]>(sn_shared + " << (kQueries + kBuffers * kKeys) * qRow << ");\n";
  out << CudaPrinter::locals(kernel, 1);
  out << "  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, group = lane / 4, quad = lane % 4;\n";
  out << "  const long long rowBase = (long long)blockIdx.x * " << kQueries << ";\n";
  out << "  " << v(spec.b) << " = blockIdx.y;\n";

  // A tile of kQueries (= kKeys) rows of an operand into shared memory: row r is position base + r of `rowVar`
  // (zero past `limit`), column c is channel c. Each thread takes a fixed count of them (columns is a multiple of 16,
  // so the tile's 16-byte runs, and its elements, are a multiple of the block's 128 threads): with the count known
  // the copies unroll and share their address arithmetic, where a loop bounded by tid kept a remainder loop and
  // recomputed each address (ViT-B/16's keys and values took about 240 instructions a step).
  auto loadTile = [&](const char *tile, const ExprRef &value, int rowVar, const std::string &base, int64_t limit,
                      int64_t columns, const std::string &indent) {
    if (const Expr *load = runLoad(value, operands, 8, spec.c, columns)) {
      const int64_t runs = columns / 8;
      out << indent << "#pragma unroll\n";
      out << indent << "for (int k = 0; k < " << kQueries * runs / kThreads << "; ++k) {\n";
      out << indent << "  const int e = tid + k * " << kThreads << ", row = e / " << runs << ", column = (e % " << runs
          << ") * 8;\n";
      out << indent << "  const long long at = " << base << " + row;\n";
      out << indent << "  " << v(rowVar) << " = at < " << limit << "LL ? at : " << limit - 1 << "LL; " << v(spec.c)
          << " = column;\n";
      out << indent << "  sn_cp_async16(&" << tile << "[row][column], b" << load->id << " + "
          << printer.expr(load->operands[0]) << ", at < " << limit << "LL);\n";
      out << indent << "}\n";
    } else {
      out << indent << "#pragma unroll 4\n";
      out << indent << "for (int k = 0; k < " << kQueries * columns / kThreads << "; ++k) {\n";
      out << indent << "  const int e = tid + k * " << kThreads << ", row = e / " << columns << ", column = e % "
          << columns << ";\n";
      out << indent << "  const long long at = " << base << " + row;\n";
      out << indent << "  float x = 0.f;\n";
      out << indent << "  if (at < " << limit << "LL) {\n";
      out << indent << "    " << v(rowVar) << " = at; " << v(spec.c) << " = column;\n";
      out << indent << "    x = " << printer.expr(value) << ";\n";
      out << indent << "  }\n";
      out << indent << "  " << tile << "[row][column] = " << toHalf << "(x);\n";
      out << indent << "}\n";
    }
  };
  auto pack = [&](const std::string &low, const std::string &high) { return packedHalves(toHalf, low, high); };

  // 1. The queries, as A fragments: rows group and group + 8 of the warp's 16, channels
  // 2 * quad (+1) and 2 * quad + 8 (+1) of each 16.
  const int64_t steps = ceilDiv(spec.lk, kKeys);
  loadTile("sQ", spec.query, spec.i, "rowBase", spec.lq, spec.d, "  ");
  loadTile("sK[0]", spec.key, spec.j, "0LL", spec.lk, spec.d, "  ");
  loadTile("sV[0]", spec.value, spec.j, "0LL", spec.lk, spec.dv, "  ");
  out << "  sn_cp_async_commit<0>();\n";
  if (steps > 1) {
    loadTile("sK[1]", spec.key, spec.j, std::to_string(kKeys) + "LL", spec.lk, spec.d, "  ");
    loadTile("sV[1]", spec.value, spec.j, std::to_string(kKeys) + "LL", spec.lk, spec.dv, "  ");
  }
  out << "  sn_cp_async_commit<0>();\n  sn_cp_async_wait<1>();\n  __syncthreads();\n";
  const int64_t qSteps = spec.d / 16, vTiles = spec.dv / 8;
  out << "  unsigned qa[" << qSteps << "][4];\n";
  out << "#pragma unroll\n  for (int ks = 0; ks < " << qSteps << "; ++ks) {\n";
  out << "    qa[ks][0] = *reinterpret_cast<const unsigned *>(&sQ[warp * 16 + group][ks * 16 + 2 * quad]);\n";
  out << "    qa[ks][1] = *reinterpret_cast<const unsigned *>(&sQ[warp * 16 + group + 8][ks * 16 + 2 * quad]);\n";
  out << "    qa[ks][2] = *reinterpret_cast<const unsigned *>(&sQ[warp * 16 + group][ks * 16 + 2 * quad + 8]);\n";
  out << "    qa[ks][3] = *reinterpret_cast<const unsigned *>(&sQ[warp * 16 + group + 8][ks * 16 + 2 * quad + 8]);\n";
  out << "  }\n";
  out << "  float o[" << vTiles << "][4];\n";
  out << "#pragma unroll\n  for (int n = 0; n < " << vTiles << "; ++n)\n    o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;\n";
  out << "  float rowMax[2] = {-(float)SN_INF, -(float)SN_INF}, rowSum[2] = {0.f, 0.f};\n";
  if (spec.mask)
    out << "  const float log2e = 1.4426950408889634f;\n";
  // A warp whose 16 queries are all past the last one (the last block of a head whose length is
  // not a multiple of 64: 197 tokens leave three of its four warps nothing) copies its share of
  // each step and meets the others, but multiplies nothing.
  const bool partialQueries = spec.lq % kQueries != 0, partialKeys = spec.lk % kKeys != 0;
  if (partialQueries)
    out << "  const bool active = rowBase + warp * 16 < " << spec.lq << "LL;\n";

  // 2. The keys, 64 at a time. Only a head's last step can hold fewer than 64 keys: with `partial`
  // the step tests each tile of keys against the head's end, and the loop of the steps before it
  // goes without those tests (32 selects and 24 comparisons a step for ViT-B/16's 197 tokens).
  auto printSteps = [&](int64_t first, int64_t end, bool partial) {
    out << "  for (int step = " << first << "; step < " << end << "; ++step) {\n";
    out << "    const long long keyBase = (long long)step * " << kKeys << ";\n";
    // Step 1's keys and values were requested with step 0's; from step 1 on, the step requests
    // the next one's into the buffer the step before it left. The groups: the queries with step
    // 0, step 1, then one a step (empty past the end); all but the newest have landed once the
    // step's own has.
    out << "    const int current = step % " << kBuffers << ";\n";
    out << "    if (step >= 1 && step + 1 < " << steps << ") {\n";
    loadTile("sK[current ^ 1]", spec.key, spec.j, "keyBase + " + std::to_string(kKeys), spec.lk, spec.d, "      ");
    loadTile("sV[current ^ 1]", spec.value, spec.j, "keyBase + " + std::to_string(kKeys), spec.lk, spec.dv, "      ");
    out << "    }\n";
    out << "    if (step >= 1) sn_cp_async_commit<0>();\n    sn_cp_async_wait<1>();\n    __syncthreads();\n";
    // The keys of the step that exist: in a head's last step, the tiles of eight keys (and the
    // sixteens of P.V) wholly past its end multiply nothing (their scores are -inf below, their
    // exponentials 0). Every step but the last has all 64.
    if (partial)
      out << "    const int keys = " << spec.lk << " - (int)keyBase;\n";
    out << "    if (" << (partialQueries ? "active" : "true") << ") {\n";
    out << "    float s[8][4];\n";
    out << "#pragma unroll\n    for (int t = 0; t < 8; ++t) {\n";
    out << "      s[t][0] = s[t][1] = s[t][2] = s[t][3] = 0.f;\n";
    if (partial)
      out << "      if (t * 8 >= keys) continue;\n";
    if (spec.d % 32 == 0) {
      // The keys' B fragments of two k16 steps at once: ldmatrix.x4 of four 8x8 blocks (eight keys
      // by channels 0-7, 8-15, 16-23, 24-31 of the pair), lanes 8 * b .. 8 * b + 7 naming block b's rows.
      out << "#pragma unroll\n      for (int ks = 0; ks < " << qSteps << "; ks += 2) {\n";
      out << "        unsigned kb[4];\n";
      out << "        sn_ldmatrix_x4(kb, &sK[current][t * 8 + lane % 8][ks * 16 + (lane / 8) * 8]);\n";
      out << "        sn_mma16816<" << (bf16 ? "true" : "false") << ">(s[t], qa[ks], kb[0], kb[1]);\n";
      out << "        sn_mma16816<" << (bf16 ? "true" : "false") << ">(s[t], qa[ks + 1], kb[2], kb[3]);\n";
      out << "      }\n";
    } else {
      out << "#pragma unroll\n      for (int ks = 0; ks < " << qSteps << "; ++ks)\n";
      out << "        sn_mma16816<" << (bf16 ? "true" : "false") << ">(s[t], qa[ks], "
          << "*reinterpret_cast<const unsigned *>(&sK[current][t * 8 + group][ks * 16 + 2 * quad]), "
          << "*reinterpret_cast<const unsigned *>(&sK[current][t * 8 + group][ks * 16 + 2 * quad + 8]));\n";
    }
    out << "    }\n";
    // The logits. With a mask they are scaled and masked here, in base e: log2(e) times a mask of
    // float32's lowest value (BERT's) would overflow to -inf and empty a row whose every key is
    // masked. Without one the scores stay as they are (the scale is positive, so their maximum is
    // the logits'), and each exponential is one ex2 of one fma, the scale times log2(e) folded into
    // it. Either way keys past the end are -inf.
    const bool folded = !spec.mask;
    if (spec.mask || partial) {
      out << "#pragma unroll\n    for (int t = 0; t < 8; ++t)\n";
      out << "#pragma unroll\n      for (int c = 0; c < 4; ++c) {\n";
      out << "        const int key = (int)keyBase + t * 8 + 2 * quad + c % 2;\n";
      out << "        float x = s[t][c];\n";
      if (spec.mask) {
        out << "        const int row = (int)rowBase + warp * 16 + group + (c / 2) * 8;\n";
        out << "        " << v(spec.i) << " = row < " << spec.lq << " ? row : " << spec.lq - 1 << "; " << v(spec.j)
            << " = key < " << spec.lk << " ? key : " << spec.lk - 1 << ";\n";
        out << "        x = x * " << printer.expr(typedConstant(DType::Float32, spec.scale)) << " + "
            << printer.expr(spec.mask) << ";\n";
      }
      if (partial)
        out << "        s[t][c] = key < " << spec.lk << " ? x : -(float)SN_INF;\n";
      else
        out << "        s[t][c] = x;\n";
      out << "      }\n";
    }
    const std::string scaleLog2 = printer.expr(typedConstant(DType::Float32, spec.scale * 1.4426950408889634));
    // ex2 of `value` less the row's base, in base 2.
    auto exponent = [&](const std::string &value) {
      return folded ? "fmaf(" + value + ", " + scaleLog2 + ", -shift)" : "(" + value + " - base) * log2e";
  };
  // The online softmax, per row (h = 0: row group, h = 1: row group + 8); a row's 64 scores
  // are spread over the four lanes of its quad.
  out << "#pragma unroll\n    for (int h = 0; h < 2; ++h) {\n";
  out << "      float peak = rowMax[h];\n";
  out << "#pragma unroll\n      for (int t = 0; t < 8; ++t)\n        peak = fmaxf(peak, fmaxf(s[t][2 * h], s[t][2 * h + 1]));\n";
  out << "      peak = fmaxf(peak, __shfl_xor_sync(0xffffffffu, peak, 1));\n";
  out << "      peak = fmaxf(peak, __shfl_xor_sync(0xffffffffu, peak, 2));\n";
  out << "      const float base = peak == -(float)SN_INF ? 0.f : peak;\n";
  if (folded)
    out << "      const float shift = base * " << scaleLog2 << ";\n";
  out << "      const float correction = sn_ex2(" << exponent("rowMax[h]") << ");\n";
  out << "      rowMax[h] = peak;\n";
  out << "      float sum = 0.f;\n";
  out << "#pragma unroll\n      for (int t = 0; t < 8; ++t)\n";
  out << "#pragma unroll\n        for (int c = 2 * h; c < 2 * h + 2; ++c) {\n";
  out << "          s[t][c] = sn_ex2(" << exponent("s[t][c]") << ");\n";
  out << "          sum += s[t][c];\n";
  out << "        }\n";
  out << "      sum += __shfl_xor_sync(0xffffffffu, sum, 1);\n";
  out << "      sum += __shfl_xor_sync(0xffffffffu, sum, 2);\n";
  out << "      rowSum[h] = rowSum[h] * correction + sum;\n";
  out << "#pragma unroll\n      for (int n = 0; n < " << vTiles << "; ++n) {\n";
  out << "        o[n][2 * h] *= correction;\n        o[n][2 * h + 1] *= correction;\n";
  out << "      }\n";
  out << "    }\n";
  // 3. P.V: keys kk * 16 .. kk * 16 + 15 are score tiles 2 * kk and 2 * kk + 1.
  out << "#pragma unroll\n    for (int kk = 0; kk < 4; ++kk) {\n";
  if (partial)
    out << "      if (kk * 16 >= keys) continue;\n";
  out << "      const unsigned pa[4] = {" << pack("s[2 * kk][0]", "s[2 * kk][1]") << ", "
      << pack("s[2 * kk][2]", "s[2 * kk][3]") << ", " << pack("s[2 * kk + 1][0]", "s[2 * kk + 1][1]") << ", "
      << pack("s[2 * kk + 1][2]", "s[2 * kk + 1][3]") << "};\n";
  out << "#pragma unroll\n      for (int n = 0; n < " << vTiles << "; ++n) {\n";
  out << "        unsigned vb[2];\n";
  out << "        sn_ldmatrix_x2_trans(vb, &sV[current][kk * 16 + lane % 16][n * 8]);\n";
  out << "        sn_mma16816<" << (bf16 ? "true" : "false") << ">(o[n], pa, vb[0], vb[1]);\n";
  out << "      }\n";
  out << "    }\n";
  out << "    }\n"; // active
  out << "    __syncthreads();\n"; // every warp is done with this step's buffers before the next request
  out << "  }\n";
  };
  if (partialKeys && steps > 1) {
    printSteps(0, steps - 1, false);
    printSteps(steps - 1, steps, true);
  } else {
    printSteps(0, steps, partialKeys);
  }

  // 4. The outputs through the epilogue: each output times its row's reciprocal sum (one division a row; a
  // division an output took about 20 instructions and a branch each, as much as a step of the keys).
  out << "  const float inverse[2] = {rowSum[0] > 0.f ? 1.f / rowSum[0] : 0.f, "
         "rowSum[1] > 0.f ? 1.f / rowSum[1] : 0.f};\n";
  out << "#pragma unroll\n  for (int n = 0; n < " << vTiles << "; ++n)\n";
  out << "#pragma unroll\n    for (int c = 0; c < 4; ++c) {\n";
  out << "      " << v(spec.i) << " = rowBase + warp * 16 + group + (c / 2) * 8; " << v(spec.c)
      << " = n * 8 + 2 * quad + c % 2;\n";
  out << "      if (" << v(spec.i) << " < " << spec.lq << "LL) {\n";
  out << "        " << v(spec.acc) << " = o[n][c] * inverse[c / 2];\n";
  out << printer.statements(spec.epilogue, 4);
  out << "      }\n";
  out << "    }\n";
  out << "}\n";

  launch.grid[0] = uint32_t(ceilDiv(spec.lq, kQueries));
  launch.grid[1] = uint32_t(spec.batch);
  launch.grid[2] = 1;
  launch.block[0] = kThreads;
  launch.block[1] = launch.block[2] = 1;
  launch.sharedBytes = uint32_t(((kQueries + kBuffers * kKeys) * qRow + kBuffers * kKeys * vRow) * 2);
  launch.parallelExtent = spec.batch * spec.lq;
  return out.str();
}

} // namespace sinter::codegen::cuda
