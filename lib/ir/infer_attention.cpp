// Inference for Attention and RotaryEmbedding.
//
// Attention: Q, K and V are all 3-D ([batch, sequence, heads * head_size], which needs
// q_num_heads and kv_num_heads) or all 4-D ([batch, heads, sequence, head_size]). Outputs: Y
// shaped like Q with V's head size; present_key / present_value [batch, kv_heads, past + kv_len,
// head_size]; qk_matmul_output [batch, q_heads, q_len, past + kv_len].
#include "infer_rules.h"

namespace sinter::infer {
namespace {

bool isAttentionFloat(DType t) {
  return t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16 || t == DType::Float64;
}

Types attention(const InferContext &ctx) {
  for (int i : {0, 1, 2})
    ctx.requireDType(i, isAttentionFloat, "a float type");
  ctx.requireSameDType(0, 1);
  ctx.requireSameDType(0, 2);
  int rank = ctx.rank(0);
  if (rank != 3 && rank != 4)
    ctx.failInput(0, "must be 3-D or 4-D");
  ctx.requireRank(1, rank);
  ctx.requireRank(2, rank);
  const Shape &q = ctx.shape(0), &k = ctx.shape(1), &v = ctx.shape(2);
  Dim batch = q[0], qHeads, kvHeads, qLen, kvLen, vHeadSize, headSize;
  if (rank == 3) {
    int64_t qCount = ctx.node().attrInt("q_num_heads", 0);
    int64_t kvCount = ctx.node().attrInt("kv_num_heads", 0);
    if (qCount <= 0 || kvCount <= 0)
      ctx.fail("3-D inputs need positive q_num_heads and kv_num_heads attributes");
    qHeads = Dim(qCount);
    kvHeads = Dim(kvCount);
    qLen = q[1];
    kvLen = k[1];
    headSize = divideBy(ctx, k[2], kvCount, "K's hidden size");
    vHeadSize = divideBy(ctx, v[2], kvCount, "V's hidden size");
    divideBy(ctx, q[2], qCount, "Q's hidden size");
  } else {
    qHeads = q[1];
    kvHeads = k[1];
    qLen = q[2];
    kvLen = k[2];
    headSize = k[3];
    vHeadSize = v[3];
  }
  if (qHeads.isStatic() && kvHeads.isStatic() &&
      (kvHeads.value() == 0 || qHeads.value() % kvHeads.value() != 0))
    ctx.fail(qHeads.value(), " query heads are not a multiple of ", kvHeads.value(),
             " key/value heads");
  if (ctx.hasInput(4) != ctx.hasInput(5))
    ctx.fail("past_key and past_value must be given together");
  Dim total = kvLen;
  if (ctx.hasInput(4)) {
    ctx.requireRank(4, 4);
    ctx.requireRank(5, 4);
    total = addDims(ctx, ctx.shape(4)[2], kvLen);
  }
  if (ctx.hasInput(3)) {
    int maskRank = ctx.rank(3);
    if (maskRank < 1 || maskRank > 4)
      ctx.failInput(3, "(attn_mask) must have rank 1 to 4");
    // ONNX asks a float mask for Q's type; a float32 mask with 16-bit Q, K and V is also taken:
    // reduce-precision stores those in 16 bits and keeps the mask's large negatives in f32.
    if (ctx.dtype(3) != DType::Bool && ctx.dtype(3) != DType::Float32)
      ctx.requireSameDType(3, 0);
  }
  if (ctx.hasInput(6)) {
    ctx.requireDType(6, isIndexType, "i32 or i64");
    if (ctx.hasInput(4))
      ctx.fail("nonpad_kv_seqlen cannot be combined with past_key / past_value");
  }
  DType dtype = ctx.dtype(0);
  Types out;
  if (rank == 3)
    out.push_back({dtype, {batch, qLen, mulDims(ctx, qHeads, vHeadSize)}});
  else
    out.push_back({dtype, {batch, qHeads, qLen, vHeadSize}});
  if (ctx.numOutputs() > 1)
    out.push_back({dtype, {batch, kvHeads, total, headSize}});
  if (ctx.numOutputs() > 2)
    out.push_back({dtype, {batch, kvHeads, total, vHeadSize}});
  if (ctx.numOutputs() > 3)
    out.push_back({dtype, {batch, qHeads, qLen, total}});
  return out;
}

/// RotaryEmbedding: the input's type; 3-D input needs num_heads.
Types rotaryEmbedding(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  ctx.requireSameDType(0, 1);
  ctx.requireSameDType(0, 2);
  int rank = ctx.rank(0);
  if (rank != 3 && rank != 4)
    ctx.failInput(0, "must be 3-D or 4-D");
  if (rank == 3) {
    int64_t heads = ctx.node().attrInt("num_heads", 0);
    if (heads <= 0)
      ctx.fail("3-D input needs a positive num_heads attribute");
    divideBy(ctx, ctx.shape(0)[2], heads, "the hidden size");
  }
  if (ctx.hasInput(3))
    ctx.requireDType(3, isIndexType, "i32 or i64");
  return {ctx.type(0)};
}

} // namespace

void registerAttentionInference(InferTable &table) {
  table.add(OpKind::RotaryEmbedding, rotaryEmbedding);
  table.add(OpKind::Attention, attention);
}

} // namespace sinter::infer
