// Kernels that give each point of the parallel index to a warp rather than a thread (a
// LayerNorm's or a softmax's row, a reduction's output): the warp's lanes share out the
// kernel's top-level Parallel and Reduction loops, combine a reduction's terms by butterfly
// exchange, and carry on with the same bits on every lane.
//
// Rows held in registers (RowPlan). When two or more of those loops read the same elements (a
// LayerNorm reads its row for the mean, the variance and the output) and the loops' length E is
// a multiple of 32 up to 1024, each lane loads its share of those elements once, before the
// first loop that reads them, and every loop of that length walks one mapping, fully unrolled:
// lane l holds elements g * 32V + l * V + j (g < E / 32V, j < V). V makes a lane's run 16
// bytes where every held index steps by one along runs of V (index_runs.h), so the row arrives
// in a few 16-byte loads issued together instead of E / 32 dependent rounds per loop. A
// Parallel loop's one store is gathered over the run and written as vectors, and a load that
// only one loop reads (a LayerNorm's scale and bias) comes a run at a time as that loop reaches
// it. ViT-B/16 b32 fp16's 25 LayerNorms took 0.296 ms with the lane-strided loops and 0.271
// with this on the H200 (docs/performance.md).
#include "cuda_source.h"
#include "cuda_vector_runs.h"
#include "sinter/codegen/kernel/index_runs.h"

#include "sinter/support/error.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <set>

namespace sinter::codegen::cuda {

namespace {

bool storesInside(const std::vector<StmtRef> &list) {
  for (const StmtRef &s : list)
    if (s->kind == StmtKind::Store || storesInside(s->body) || storesInside(s->orElse))
      return true;
  return false;
}

/// The identity of a reduction op, as CUDA C of the accumulator's type.
std::string reductionIdentity(BinaryOp op, DType type) {
  std::string name = cudaStorageType(type);
  switch (op) {
  case BinaryOp::Add: return "((" + name + ")0)";
  case BinaryOp::Mul: return "((" + name + ")1)";
  case BinaryOp::LogicalAnd: return "true";
  case BinaryOp::LogicalOr: return "false";
  case BinaryOp::Max:
  case BinaryOp::Min: {
    bool max = op == BinaryOp::Max;
    if (isFloat(type))
      return std::string(max ? "-" : "") + "(" + name + ")SN_INF";
    if (type == DType::Bool)
      return max ? "false" : "true";
    // The smallest (for Max) or largest (for Min) value of the integer type.
    bool isUnsigned = type == DType::Uint8 || type == DType::Uint16 || type == DType::Uint32 ||
                      type == DType::Uint64;
    if (isUnsigned)
      return max ? "((" + name + ")0)" : "((" + name + ")~(" + name + ")0)";
    std::string top = "((" + name + ")(~0ULL >> (65 - 8 * sizeof(" + name + "))))";
    return max ? "((" + name + ")(-" + top + " - 1))" : top;
  }
  default: break;
  }
  SINTER_ASSERT(false, "no identity for reduction op ", binaryOpName(op));
  return "?";
}

std::string combineText(BinaryOp op, const std::string &a, const std::string &b) {
  switch (op) {
  case BinaryOp::Add:
  case BinaryOp::Mul:
  case BinaryOp::LogicalAnd:
  case BinaryOp::LogicalOr:
  case BinaryOp::Max:
  case BinaryOp::Min: return binaryText(op, a, b);
  default: break;
  }
  SINTER_ASSERT(false, "no combine for reduction op ", binaryOpName(op));
  return "?";
}

/// Whether a statement list can be shared out a warp per point, and the longest of its top-level
/// Parallel and Reduction loops (INT64_MAX for one whose extent is not a constant); a Block
/// counts as its statements (a fused epilogue is one: the contraction's result assigned, then
/// stored through the casts after it).
bool warpShareable(const std::vector<StmtRef> &list, int64_t &longest) {
  for (const StmtRef &s : list) {
    if (s->kind == StmtKind::Block) {
      if (!warpShareable(s->body, longest))
        return false;
    } else if (s->kind == StmtKind::For && s->loop != LoopKind::Serial) {
      bool constantExtent = s->a->kind == ExprKind::Constant;
      longest = std::max(longest, constantExtent ? s->a->intValue : std::numeric_limits<int64_t>::max());
    } else if (s->kind != StmtKind::Store && s->kind != StmtKind::Assign && storesInside({s})) {
      return false;
    }
  }
  return true;
}

/// Threads that fill an H200 once (132 SMs of 2048 threads): a kernel with at least this many
/// points keeps every SM busy with a thread a point.
constexpr int64_t kOneWave = 132 * 2048;
/// The longest loop a thread of such a kernel runs alone. A 7x7 depthwise convolution (49 taps)
/// or a grouped 3x3 of 8 channels a group (72) shared a warp a point took 32 times the threads,
/// left half the lanes of the loop's second round idle and read each lane's taps apart: ConvNeXt-T
/// b32's 7x7 convolutions took 1.80 ms each and RegNetY-400MF b32's grouped 3x3 1.26 ms on the H200.
constexpr int64_t kThreadLoop = 96;

} // namespace

bool warpPerPoint(const Kernel &kernel) {
  int64_t longest = 0;
  if (!warpShareable(kernel.body, longest) || longest < 32)
    return false; // nothing to share, or loops too short for a warp's lanes
  return !(kernel.parallelExtent >= kOneWave && longest <= kThreadLoop);
}

namespace {

bool hasLoop(const std::vector<StmtRef> &statements) {
  return std::any_of(statements.begin(), statements.end(), [](const StmtRef &statement) {
    return statement->kind == StmtKind::For || hasLoop(statement->body) || hasLoop(statement->orElse);
  });
}

/// Below this many points a kernel keeps a thread a point: it has few waves to begin with.
constexpr int64_t kUnrolledExtent = int64_t(1) << 20;
constexpr int kUnroll = 4;

} // namespace

int pointsPerThread(const Kernel &kernel) {
  return !warpPerPoint(kernel) && kernel.parallelExtent >= kUnrolledExtent && !hasLoop(kernel.body) ? kUnroll : 1;
}

int64_t threadsNeeded(const Kernel &kernel) {
  return warpPerPoint(kernel) ? kernel.parallelExtent * 32
                              : (kernel.parallelExtent + pointsPerThread(kernel) - 1) / pointsPerThread(kernel);
}

/// What a warp-per-point kernel's lanes hold in registers; inactive (no caches) when no loop's
/// elements are read twice.
struct RowPlan {
  int64_t extent = 0; ///< E: the loops' length
  int vector = 1;     ///< V: consecutive elements a lane holds
  /// Each held element's first read: its buffer and its index in the loop it is loaded before
  /// (the first loop that reads it) give the fill.
  std::vector<const Expr *> caches;
  std::map<const Stmt *, std::vector<size_t>> fills; ///< loop -> caches loaded just before it
  std::set<const Stmt *> loops;                      ///< loops that walk the mapping
  std::map<const Stmt *, const Stmt *> gathered;     ///< loop -> its store, written as vectors
  std::map<const Expr *, size_t> reads;              ///< each load read from a cache -> which
  /// Loads of one loop that step by one along the run, loaded a run at a time as the loop
  /// reaches it (a LayerNorm's scale and bias): loop -> their first reads; `runReads` names the
  /// run array each read of them takes (sn_run<k>).
  std::map<const Stmt *, std::vector<const Expr *>> runLoads;
  std::map<const Expr *, size_t> runReads;

  int64_t groups() const { return extent / (32 * vector); }
};

namespace {

/// The top-level Parallel and Reduction loops (inside top-level Blocks too), in order.
void sharedLoops(const std::vector<StmtRef> &list, std::vector<const Stmt *> &loops) {
  for (const StmtRef &s : list) {
    if (s->kind == StmtKind::Block)
      sharedLoops(s->body, loops);
    else if (s->kind == StmtKind::For && s->loop != LoopKind::Serial)
      loops.push_back(s.get());
  }
}

/// Whether any statement of `list` (at any depth) reads buffer `buffer`.
bool readsBuffer(const std::vector<StmtRef> &list, int buffer) {
  std::function<bool(const ExprRef &)> reads = [&](const ExprRef &e) {
    return (e->kind == ExprKind::Load && e->id == buffer) || std::any_of(e->operands.begin(), e->operands.end(), reads);
  };
  return std::any_of(list.begin(), list.end(), [&](const StmtRef &s) {
    return (s->a && reads(s->a)) || (s->b && reads(s->b)) || readsBuffer(s->body, buffer) ||
           readsBuffer(s->orElse, buffer);
  });
}

/// Whether an index reads only the point (v0), the loop's variable and constants.
bool rowIndex(const ExprRef &e, int loopVariable) {
  switch (e->kind) {
  case ExprKind::Var: return e->id == 0 || e->id == loopVariable;
  case ExprKind::Load: return false;
  default:
    return std::all_of(e->operands.begin(), e->operands.end(),
                       [&](const ExprRef &operand) { return rowIndex(operand, loopVariable); });
  }
}

/// A load a row loop may hold or read a run at a time: of a buffer the kernel does not write, of
/// 16- or 32-bit values, at an index of the point, the loop's variable and constants.
bool rowLoad(const Kernel &kernel, const Expr &load, int loopVariable) {
  return !kernel.buffers[load.id].written && heldType(load.type) && rowIndex(load.operands[0], loopVariable);
}

constexpr int64_t kMostHeld = 64; ///< elements a lane holds at most, over all caches (registers)

RowPlan planRows(const Kernel &kernel) {
  RowPlan plan;
  std::vector<const Stmt *> loops;
  sharedLoops(kernel.body, loops);
  int64_t extent = 0;
  for (const Stmt *loop : loops) {
    if (loop->a->kind == ExprKind::Constant && loop->a->intValue % 32 == 0 && loop->a->intValue <= 1024) {
      extent = loop->a->intValue;
      break;
    }
  }
  if (extent == 0)
    return plan;
  auto ofExtent = [&](const Stmt *loop) { return loop->a->kind == ExprKind::Constant && loop->a->intValue == extent; };

  // Reads of one element in several loops: a group per (buffer, index up to the loop variable).
  struct Group {
    std::vector<const Expr *> reads;
    std::vector<int> variables; ///< the loop variable of each read
    std::set<const Stmt *> loops;
    const Stmt *first;
  };
  std::vector<Group> groups;
  for (const Stmt *loop : loops) {
    if (!ofExtent(loop))
      continue;
    std::vector<const Expr *> loads;
    unconditionalLoads(loop->body, loads);
    for (const Expr *load : loads) {
      if (!rowLoad(kernel, *load, loop->id) || !usesVariable(load->operands[0], loop->id))
        continue;
      auto same = std::find_if(groups.begin(), groups.end(), [&](const Group &g) {
        return sameUpTo(*g.reads[0], g.variables[0], *load, loop->id);
      });
      if (same == groups.end()) {
        groups.push_back({{}, {}, {}, loop});
        same = groups.end() - 1;
      }
      same->reads.push_back(load);
      same->variables.push_back(loop->id);
      same->loops.insert(loop);
    }
  }
  std::vector<const Group *> held;
  int64_t elements = 0;
  for (const Group &g : groups) {
    if (g.loops.size() >= 2 && elements + extent / 32 <= kMostHeld) {
      held.push_back(&g);
      elements += extent / 32;
    }
  }
  if (held.empty())
    return plan;

  // V: a 16-byte run of the widest held type, halved until the loops split into whole runs of
  // 32 lanes and every held index steps by one along them.
  int widest = 0;
  for (const Group *g : held)
    widest = std::max(widest, dtypeSize(g->reads[0]->type));
  int vector = 16 / widest;
  auto fits = [&](int v) {
    if (extent % (32 * v) != 0)
      return false;
    return v == 1 || std::all_of(held.begin(), held.end(), [&](const Group *g) {
             return runForm(g->reads[0]->operands[0], g->variables[0], v) == RunForm::Unit;
           });
  };
  while (vector > 1 && !fits(vector))
    vector /= 2;

  plan.extent = extent;
  plan.vector = vector;
  for (const Group *g : held) {
    plan.fills[g->first].push_back(plan.caches.size());
    for (const Expr *read : g->reads)
      plan.reads[read] = plan.caches.size();
    plan.caches.push_back(g->reads[0]);
  }
  size_t runArrays = 0;
  for (const Stmt *loop : loops) {
    if (!ofExtent(loop))
      continue;
    plan.loops.insert(loop);
    if (vector > 1) {
      std::vector<const Expr *> loads;
      unconditionalLoads(loop->body, loads);
      std::vector<const Expr *> &first = plan.runLoads[loop];
      for (const Expr *load : loads) {
        if (plan.reads.count(load) || !rowLoad(kernel, *load, loop->id) || vector * dtypeSize(load->type) < 4 ||
            runForm(load->operands[0], loop->id, vector) != RunForm::Unit)
          continue;
        auto same = std::find_if(first.begin(), first.end(),
                                 [&](const Expr *f) { return sameUpTo(*f, loop->id, *load, loop->id); });
        if (same == first.end()) {
          plan.runReads[load] = runArrays++;
          first.push_back(load);
        } else {
          plan.runReads[load] = plan.runReads.at(*same);
        }
      }
    }
    if (loop->loop != LoopKind::Parallel)
      continue;
    // A loop's one store, unconditional, of 16- or 32-bit values whose index steps by one along
    // the run, into a buffer the loop does not read, is gathered over the run (at least 4 bytes).
    std::vector<const Stmt *> all, top;
    countStores(loop->body, true, all, top);
    if (all.size() != 1 || top.size() != 1)
      continue;
    const Stmt *store = top[0];
    DType type = kernel.buffers[store->id].dtype;
    if (!heldType(type) || vector * dtypeSize(type) < 4 || !rowIndex(store->a, loop->id) ||
        runForm(store->a, loop->id, vector) != RunForm::Unit)
      continue;
    if (!readsBuffer(loop->body, store->id))
      plan.gathered[loop] = store;
  }
  return plan;
}

/// Opens a Reduction loop's combining: each accumulator starts from its op's identity (its value
/// before the loop kept aside), so each lane folds only its own share.
void openReduction(std::ostream &out, const Stmt &s, const std::string &pad) {
  out << pad << "{\n";
  for (size_t i = 0; i < s.body.size(); ++i) {
    const Stmt &term = *s.body[i];
    std::string acc = "v" + std::to_string(term.id);
    out << pad << "  const " << cudaStorageType(term.a->type) << " sn_before" << i << " = " << acc << ";\n"
        << pad << "  " << acc << " = " << reductionIdentity(reductionOp(term), term.a->type) << ";\n";
  }
}

/// Closes it: the lanes combine their shares by butterfly exchange, lane 0's total goes to all
/// (so every lane continues with the same bits), and the value from before the loop is folded in
/// last.
void closeReduction(std::ostream &out, const Stmt &s, const std::string &pad) {
  for (size_t i = 0; i < s.body.size(); ++i) {
    const Stmt &term = *s.body[i];
    std::string acc = "v" + std::to_string(term.id);
    BinaryOp op = reductionOp(term);
    out << pad << "  for (int sn_lanes = 16; sn_lanes > 0; sn_lanes >>= 1) " << acc << " = "
        << combineText(op, acc, "sn_shfl_xor(" + acc + ", sn_lanes)") << ";\n"
        << pad << "  " << acc << " = " << combineText(op, "sn_before" + std::to_string(i), "sn_shfl_first(" + acc + ")")
        << ";\n";
  }
  out << pad << "}\n";
}

} // namespace

std::string CudaPrinter::warpKernelBody(const Kernel &kernel) {
  // One warp per point: every lane of a warp has the same v0, so the loop and the exchanges
  // inside it are warp-uniform.
  std::string text = "  const int lane = threadIdx.x & 31;\n";
  text += "  for (long long v0 = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5; v0 < extent;"
          " v0 += ((long long)gridDim.x * blockDim.x) >> 5) {\n";
  text += locals(kernel, 2);
  const RowPlan rows = planRows(kernel);
  const std::string vector = std::to_string(rows.vector);
  for (const auto &[read, cache] : rows.reads)
    loadText_[read] = "sn_row" + std::to_string(cache) + "[sn_g * " + vector + " + sn_j]";
  for (const auto &[read, run] : rows.runReads)
    loadText_[read] = "sn_run" + std::to_string(run) + "[sn_j]";
  for (const auto &[loop, store] : rows.gathered)
    storeTarget_[store] = "sn_out[sn_j]";
  out_.str("");
  for (const StmtRef &s : kernel.body)
    warpStmt(*s, 2, rows);
  text += out_.str();
  loadText_.clear();
  storeTarget_.clear();
  return text;
}

void CudaPrinter::warpStmt(const Stmt &s, int depth, const RowPlan &rows) {
  std::string pad(depth * 2, ' ');
  std::string loopVar = "v" + std::to_string(s.id);
  if (s.kind == StmtKind::Block) {
    for (const StmtRef &child : s.body)
      warpStmt(*child, depth, rows);
    return;
  }
  if (s.kind == StmtKind::Store) {
    // Every lane holds the same value; one writes it.
    Line store = line({s.a, s.b}, pad);
    out_ << store.definitions << pad << "if (lane == 0) b" << s.id << "[" << store.texts[0] << "] = " << store.texts[1]
         << ";\n";
    return;
  }
  if (s.kind != StmtKind::For || s.loop == LoopKind::Serial) {
    stmt(s, depth); // runs on every lane alike
    return;
  }
  if (rows.loops.count(&s)) {
    rowLoop(s, depth, rows);
    return;
  }
  Line bound = line({s.a}, pad);
  out_ << bound.definitions;
  std::string header = pad + "for (" + loopVar + " = lane; " + loopVar + " < " + bound.texts[0] + "; " +
                       loopVar + " += 32) {\n";
  if (s.loop == LoopKind::Parallel) {
    out_ << header;
    stmts(s.body, depth + 1);
    out_ << pad << "}\n";
    return;
  }
  openReduction(out_, s, pad);
  out_ << pad << "  " << header.substr(pad.size());
  stmts(s.body, depth + 2);
  out_ << pad << "  }\n";
  closeReduction(out_, s, pad);
}

void CudaPrinter::rowLoop(const Stmt &s, int depth, const RowPlan &rows) {
  const std::string pad(depth * 2, ' ');
  const int v = rows.vector;
  const std::string loopVar = "v" + std::to_string(s.id), groups = std::to_string(rows.groups()),
                    span = std::to_string(32 * v), perLane = std::to_string(rows.extent / 32);
  // The first element of the lane's run g.
  const std::string runStart = "(long long)(sn_g * " + span + " + lane * " + std::to_string(v) + ")";
  // The address of a load's or store's element at the loop variable's present value.
  auto address = [&](int buffer, const ExprRef &index) { return "&b" + std::to_string(buffer) + "[" + expr(index) + "]"; };
  if (auto fills = rows.fills.find(&s); fills != rows.fills.end()) {
    for (size_t c : fills->second) {
      const Expr *cache = rows.caches[c];
      const DType type = cache->type;
      const std::string name = "sn_row" + std::to_string(c), element = cudaStorageType(type);
      out_ << pad << element << " " << name << "[" << perLane << "];\n";
      out_ << pad << "#pragma unroll\n" << pad << "for (int sn_g = 0; sn_g < " << groups << "; ++sn_g) {\n";
      out_ << pad << "  " << loopVar << " = " << runStart << ";\n";
      out_ << runLoadText(type, v, address(cache->id, cache->operands[0]), [&](int i) {
        return name + "[sn_g * " + std::to_string(v) + " + " + std::to_string(i) + "]";
      }, pad + "  ");
      out_ << pad << "}\n";
    }
  }
  const bool reduction = s.loop == LoopKind::Reduction;
  const std::string inner = reduction ? pad + "  " : pad;
  if (reduction)
    openReduction(out_, s, pad);
  const auto gathered = rows.gathered.find(&s);
  out_ << inner << "#pragma unroll\n" << inner << "for (int sn_g = 0; sn_g < " << groups << "; ++sn_g) {\n";
  DType stored = DType::Float32;
  if (gathered != rows.gathered.end()) {
    stored = gathered->second->b->type;
    out_ << inner << "  " << cudaStorageType(stored) << " sn_out[" << v << "];\n";
  }
  if (auto runLoads = rows.runLoads.find(&s); runLoads != rows.runLoads.end() && !runLoads->second.empty()) {
    out_ << inner << "  " << loopVar << " = " << runStart << ";\n";
    for (const Expr *load : runLoads->second) {
      const std::string name = "sn_run" + std::to_string(rows.runReads.at(load));
      out_ << inner << "  " << cudaStorageType(load->type) << " " << name << "[" << v << "];\n";
      out_ << runLoadText(load->type, v, address(load->id, load->operands[0]),
                          [&](int i) { return name + "[" + std::to_string(i) + "]"; }, inner + "  ");
    }
  }
  out_ << inner << "#pragma unroll\n" << inner << "  for (int sn_j = 0; sn_j < " << v << "; ++sn_j) {\n";
  out_ << inner << "    " << loopVar << " = " << runStart << " + sn_j;\n";
  stmts(s.body, depth + (reduction ? 3 : 2));
  out_ << inner << "  }\n";
  if (gathered != rows.gathered.end()) {
    const Stmt &store = *gathered->second;
    out_ << inner << "  " << loopVar << " = " << runStart << ";\n";
    out_ << runStoreText(stored, v, address(store.id, store.a),
                         [&](int i) { return "sn_out[" + std::to_string(i) + "]"; }, inner + "  ");
  }
  out_ << inner << "}\n";
  if (reduction)
    closeReduction(out_, s, pad);
}

} // namespace sinter::codegen::cuda
