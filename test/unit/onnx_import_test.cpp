// The ONNX importer on models built in C++: malformed files and graphs fail with clear messages,
// unsupported ops are listed all at once, initializers in every storage form and external data
// read back the values written, and graph inputs honour symbolic dims and the shape options.
#include "onnx_test_util.h"

#include "sinter/ir/graph.h"

#include <bit>
#include <cmath>
#include <cstring>

using namespace sinter;
using namespace sinter::onnx_test;
using ::onnx::TensorProto;

namespace {

// A model reading x: f32[2] and adding initializer w: f32[2] (given by the caller).
ModelBuilder addModel() {
  ModelBuilder m;
  m.inputF32("x", {2});
  m.node("Add", {"x", "w"}, {"y"}, "add");
  m.output("y");
  return m;
}

} // namespace

// ---- malformed files -------------------------------------------------------------------------

TEST(OnnxImport, MissingFileIsAUserError) {
  TempDir dir;
  std::string path = dir.file("absent.onnx");
  std::string message = userErrorOf([&] { sinter::onnx::importModel(path); });
  EXPECT_CONTAINS(message, path);
  EXPECT_CONTAINS(message, "no such file");
}

TEST(OnnxImport, EmptyFileIsAUserError) {
  TempDir dir;
  std::string path = dir.write("empty.onnx", "");
  EXPECT_CONTAINS(userErrorOf([&] { sinter::onnx::importModel(path); }),
                  "empty.onnx: the file is empty");
}

TEST(OnnxImport, BytesThatAreNotProtobufAreAUserError) {
  TempDir dir;
  std::string path =
      dir.write("junk.onnx", std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11));
  std::string message = userErrorOf([&] { sinter::onnx::importModel(path); });
  EXPECT_CONTAINS(message, "junk.onnx: not a valid ONNX model");
  // Text happens to parse as unknown protobuf fields; it still fails, for want of a graph.
  std::string text = dir.write("text.onnx", "this is a text file, not a model\n");
  message = userErrorOf([&] { sinter::onnx::importModel(text); });
  EXPECT_CONTAINS(message, "text.onnx: not");
}

TEST(OnnxImport, TruncatedFileIsAUserError) {
  ModelBuilder m = addModel();
  std::vector<float> values(64, 1.5f);
  m.initializerF32("w", {64}, values);
  m.graph->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_value(64);
  std::string bytes = m.bytes();
  TempDir dir;
  // Cut inside the initializer's packed float data.
  std::string path = dir.write("cut.onnx", bytes.substr(0, bytes.size() - 100));
  EXPECT_CONTAINS(userErrorOf([&] { sinter::onnx::importModel(path); }),
                  "cut.onnx: not a valid ONNX model");
}

TEST(OnnxImport, ModelWithoutGraphIsAUserError) {
  ModelBuilder m;
  m.model.clear_graph();
  EXPECT_CONTAINS(userErrorOf([&] { m.import(); }),
                  "model.onnx: not an ONNX model: it has no graph");
}

// ---- opsets and unsupported ops ----------------------------------------------------------------

TEST(OnnxImport, OpsetOutsideSevenToTwentyEightIsAUserError) {
  for (int64_t opset : {6, 29}) {
    ModelBuilder m(opset);
    m.inputF32("x", {2});
    m.node("Relu", {"x"}, {"y"});
    m.output("y");
    std::string message = userErrorOf([&] { m.import(); });
    EXPECT_CONTAINS(message, "model.onnx: ai.onnx opset " + std::to_string(opset) +
                                 " is not supported; sinter supports opsets 7 to 28");
  }
}

TEST(OnnxImport, MissingAiOnnxOpsetImportIsAUserError) {
  ModelBuilder m;
  m.model.mutable_opset_import(0)->set_domain("ai.onnx.ml");
  m.inputF32("x", {2});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  EXPECT_CONTAINS(userErrorOf([&] { m.import(); }),
                  "model.onnx: the model imports no ai.onnx opset");
}

TEST(OnnxImport, EveryUnsupportedOpTypeIsListedOnce) {
  ModelBuilder m;
  auto *microsoft = m.model.add_opset_import();
  microsoft->set_domain("com.microsoft");
  microsoft->set_version(1);
  m.inputF32("x", {1, 3, 8, 8});
  m.node("FusedConv", {"x"}, {"a"}, "f1", "com.microsoft");
  m.node("Relu", {"a"}, {"b"});
  m.node("FusedConv", {"b"}, {"c"}, "f2", "com.microsoft");
  m.node("Loop", {"c"}, {"d"}, "loop");
  m.node("StringNormalizer", {"d"}, {"e"});
  m.output("e");
  EXPECT_EQ(userErrorOf([&] { m.import(); }),
            "model.onnx: 3 unsupported op types: com.microsoft:FusedConv x2 (opset 1), "
            "ai.onnx:Loop x1 (opset 17), ai.onnx:StringNormalizer x1 (opset 17)");
}

TEST(OnnxImport, UnsupportedElementAndValueTypesNameTheValue) {
  ModelBuilder strings;
  strings.input("text", TensorProto::STRING, {2});
  strings.output("text");
  EXPECT_CONTAINS(userErrorOf([&] { strings.import(); }),
                  "graph input 'text' has element type string, which sinter does not support");

  ModelBuilder sequence;
  auto *input = sequence.graph->add_input();
  input->set_name("items");
  input->mutable_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(TensorProto::FLOAT);
  sequence.output("items");
  EXPECT_CONTAINS(userErrorOf([&] { sequence.import(); }),
                  "graph input 'items' has type seq(tensor(float)); sinter supports only tensors");

  ModelBuilder float6;
  float6.inputF32("x", {2});
  auto *weight = float6.initializer("w6", 27, {2}); // FLOAT6E2M3
  weight->set_raw_data(std::string("\x01\x02", 2));
  float6.node("Add", {"x", "w6"}, {"y"});
  float6.output("y");
  EXPECT_CONTAINS(userErrorOf([&] { float6.import(); }),
                  "initializer 'w6' has element type float6e2m3, which sinter does not support");
}

// ---- malformed graphs -------------------------------------------------------------------------

TEST(OnnxImport, ReadingAnUndefinedValueNamesTheNodeAndTheValue) {
  ModelBuilder m = addModel(); // no initializer "w"
  EXPECT_EQ(userErrorOf([&] { m.import(); }),
            "model.onnx: node 'add' (Add, opset 17): input 1 'w' is not defined: no graph input, "
            "initializer or node output has that name (a missing initializer?)");
}

TEST(OnnxImport, CyclesAreAUserErrorAndOutOfOrderNodesAreSorted) {
  ModelBuilder cyclic;
  cyclic.inputF32("x", {2});
  cyclic.node("Add", {"x", "b"}, {"a"}, "first");
  cyclic.node("Relu", {"a"}, {"b"}, "second");
  cyclic.output("b");
  EXPECT_CONTAINS(userErrorOf([&] { cyclic.import(); }),
                  "model.onnx: the graph has a cycle through node 'first' (Add, opset 17)");

  ModelBuilder shuffled;
  shuffled.inputF32("x", {2});
  shuffled.node("Neg", {"a"}, {"b"}, "second");
  shuffled.node("Relu", {"x"}, {"a"}, "first");
  shuffled.output("b");
  auto graph = shuffled.import();
  ASSERT_EQ(graph->numNodes(), 2);
  EXPECT_EQ(graph->nodes()[0]->name(), "first");
  EXPECT_EQ(graph->nodes()[1]->name(), "second");
  EXPECT_EQ(graph->outputs()[0]->name(), "b");
}

TEST(OnnxImport, ValuesDefinedTwiceAreAUserError) {
  ModelBuilder m;
  m.inputF32("x", {2});
  m.node("Relu", {"x"}, {"y"}, "one");
  m.node("Neg", {"x"}, {"y"}, "two");
  m.output("y");
  EXPECT_CONTAINS(userErrorOf([&] { m.import(); }),
                  "node 'two' (Neg, opset 17): output 'y' is also an output of node 'one'");
}

TEST(OnnxImport, NegativeAndOverflowingDimsAreAUserError) {
  ModelBuilder negativeInput;
  negativeInput.inputF32("x", {2, -3});
  negativeInput.output("x");
  EXPECT_CONTAINS(userErrorOf([&] { negativeInput.import(); }),
                  "graph input 'x' has a negative dimension -3 at index 1");

  ModelBuilder hugeInput;
  hugeInput.inputF32("x", {int64_t(1) << 40, int64_t(1) << 40});
  hugeInput.output("x");
  EXPECT_CONTAINS(userErrorOf([&] { hugeInput.import(); }), "graph input 'x'");
  EXPECT_CONTAINS(userErrorOf([&] { hugeInput.import(); }), "has too many elements");

  ModelBuilder negativeWeight = addModel();
  negativeWeight.initializer("w", TensorProto::FLOAT, {-2});
  EXPECT_CONTAINS(userErrorOf([&] { negativeWeight.import(); }),
                  "initializer 'w' has a negative dimension (-2)");

  // Claims 2^80 elements with no data: must fail before allocating anything.
  ModelBuilder hugeWeight = addModel();
  hugeWeight.initializer("w", TensorProto::FLOAT, {int64_t(1) << 40, int64_t(1) << 40});
  EXPECT_CONTAINS(userErrorOf([&] { hugeWeight.import(); }),
                  "initializer 'w' has too many elements");
  ModelBuilder bigWeight = addModel();
  bigWeight.initializer("w", TensorProto::FLOAT, {int64_t(1) << 40})->set_raw_data("abcd");
  EXPECT_CONTAINS(
      userErrorOf([&] { bigWeight.import(); }),
      "initializer 'w' (f32[1099511627776]) has 4 bytes of raw_data, expected 4398046511104");
}

TEST(OnnxImport, DataOfTheWrongSizeIsAUserError) {
  ModelBuilder raw = addModel();
  raw.initializer("w", TensorProto::FLOAT, {2})->set_raw_data(std::string(7, '\0'));
  EXPECT_EQ(userErrorOf([&] { raw.import(); }),
            "model.onnx: initializer 'w' (f32[2]) has 7 bytes of raw_data, expected 8");
  ModelBuilder typed = addModel();
  typed.initializerF32("w", {2}, {1, 2, 3});
  EXPECT_EQ(userErrorOf([&] { typed.import(); }),
            "model.onnx: initializer 'w' (f32[2]) has 3 values in float_data, expected 2");
  ModelBuilder missing = addModel();
  missing.initializer("w", TensorProto::FLOAT, {2});
  EXPECT_CONTAINS(userErrorOf([&] { missing.import(); }), "has 0 values in float_data, expected 2");
}

TEST(OnnxImport, ShapeErrorsNameTheNodeOnce) {
  ModelBuilder m;
  m.inputF32("a", {2, 3});
  m.inputF32("b", {4, 5});
  m.node("MatMul", {"a", "b"}, {"y"}, "mm");
  m.output("y");
  std::string message = userErrorOf([&] { m.import(); });
  EXPECT_EQ(message.rfind("model.onnx: node 'mm' (MatMul, opset 17): ", 0), 0u) << message;
  EXPECT_EQ(message.find("MatMul 'mm'"), std::string::npos) << message;
}

TEST(OnnxImport, UndefinedGraphOutputIsAUserError) {
  ModelBuilder m;
  m.inputF32("x", {2});
  m.output("nowhere");
  EXPECT_CONTAINS(userErrorOf([&] { m.import(); }), "graph output 'nowhere' is not defined");
}

// ---- initializer storage forms ------------------------------------------------------------------

namespace {

// Imports a model whose only output is the initializer `w` and returns its tensor.
Tensor importInitializer(const std::function<void(TensorProto *)> &fill) {
  ModelBuilder m;
  auto *tensor = m.graph->add_initializer();
  tensor->set_name("w");
  fill(tensor);
  m.output("w");
  auto graph = m.import();
  EXPECT_TRUE(graph->outputs()[0]->isConstant());
  return graph->outputs()[0]->constant();
}

template <typename T> std::vector<T> valuesOf(const Tensor &tensor) {
  std::vector<T> values(size_t(tensor.elementCount()));
  std::memcpy(values.data(), tensor.data(), tensor.byteSize());
  return values;
}

template <typename T> std::string rawBytes(const std::vector<T> &values) {
  return std::string(reinterpret_cast<const char *>(values.data()), values.size() * sizeof(T));
}

} // namespace

TEST(OnnxImport, TypedFieldStorageForms) {
  Tensor f32 = importInitializer([](TensorProto *t) {
    t->set_data_type(TensorProto::FLOAT);
    t->add_dims(3);
    for (float v : {1.5f, -2.0f, 1e30f})
      t->add_float_data(v);
  });
  EXPECT_EQ(f32.dtype(), DType::Float32);
  EXPECT_EQ(valuesOf<float>(f32), (std::vector<float>{1.5f, -2.0f, 1e30f}));

  Tensor f64 = importInitializer([](TensorProto *t) {
    t->set_data_type(TensorProto::DOUBLE);
    t->add_dims(2);
    t->add_double_data(0.1);
    t->add_double_data(-1e300);
  });
  EXPECT_EQ(valuesOf<double>(f64), (std::vector<double>{0.1, -1e300}));

  Tensor i64 = importInitializer([](TensorProto *t) {
    t->set_data_type(TensorProto::INT64);
    t->add_dims(2);
    t->add_int64_data(INT64_MIN);
    t->add_int64_data(7);
  });
  EXPECT_EQ(valuesOf<int64_t>(i64), (std::vector<int64_t>{INT64_MIN, 7}));

  Tensor u64 = importInitializer([](TensorProto *t) {
    t->set_data_type(TensorProto::UINT64);
    t->add_dims(1);
    t->add_uint64_data(UINT64_MAX);
  });
  EXPECT_EQ(valuesOf<uint64_t>(u64), (std::vector<uint64_t>{UINT64_MAX}));

  Tensor u32 = importInitializer([](TensorProto *t) {
    t->set_data_type(TensorProto::UINT32);
    t->add_dims(2);
    t->add_uint64_data(4000000000u);
    t->add_uint64_data(1);
  });
  EXPECT_EQ(u32.dtype(), DType::Uint32);
  EXPECT_EQ(valuesOf<uint32_t>(u32), (std::vector<uint32_t>{4000000000u, 1}));

  // int32_data also carries the narrow integer types, bool, and 16-bit float bit patterns.
  auto int32Field = [](int type, std::vector<int32_t> values) {
    return importInitializer([&](TensorProto *t) {
      t->set_data_type(type);
      t->add_dims(int64_t(values.size()));
      for (int32_t v : values)
        t->add_int32_data(v);
    });
  };
  EXPECT_EQ(valuesOf<int32_t>(int32Field(TensorProto::INT32, {-5, INT32_MAX})),
            (std::vector<int32_t>{-5, INT32_MAX}));
  EXPECT_EQ(valuesOf<int16_t>(int32Field(TensorProto::INT16, {-300, 300})),
            (std::vector<int16_t>{-300, 300}));
  EXPECT_EQ(valuesOf<int8_t>(int32Field(TensorProto::INT8, {-128, 127})),
            (std::vector<int8_t>{-128, 127}));
  EXPECT_EQ(valuesOf<uint16_t>(int32Field(TensorProto::UINT16, {65535, 2})),
            (std::vector<uint16_t>{65535, 2}));
  EXPECT_EQ(valuesOf<uint8_t>(int32Field(TensorProto::UINT8, {255, 0})),
            (std::vector<uint8_t>{255, 0}));
  EXPECT_EQ(valuesOf<uint8_t>(int32Field(TensorProto::BOOL, {1, 0, 1})),
            (std::vector<uint8_t>{1, 0, 1}));
  // IEEE half 0x3C00 = 1.0, 0xC000 = -2.0; bfloat16 0x3F80 = 1.0, 0x4049 = 3.140625.
  Tensor f16 = int32Field(TensorProto::FLOAT16, {0x3C00, 0xC000});
  EXPECT_EQ(f16.dtype(), DType::Float16);
  EXPECT_EQ(f16.getDouble(0), 1.0);
  EXPECT_EQ(f16.getDouble(1), -2.0);
  Tensor bf16 = int32Field(TensorProto::BFLOAT16, {0x3F80, 0x4049});
  EXPECT_EQ(bf16.dtype(), DType::BFloat16);
  EXPECT_EQ(bf16.getDouble(0), 1.0);
  EXPECT_EQ(bf16.getDouble(1), 3.140625);
}

TEST(OnnxImport, RawDataStorageForms) {
  auto raw = [](int type, std::vector<int64_t> dims, std::string bytes) {
    return importInitializer([&](TensorProto *t) {
      t->set_data_type(type);
      for (int64_t dim : dims)
        t->add_dims(dim);
      t->set_raw_data(bytes);
    });
  };
  Tensor f32 = raw(TensorProto::FLOAT, {2, 2}, rawBytes<float>({1, 2, 3, 4}));
  EXPECT_EQ(f32.dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(valuesOf<float>(f32), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(valuesOf<int64_t>(raw(TensorProto::INT64, {2}, rawBytes<int64_t>({-1, 1LL << 40}))),
            (std::vector<int64_t>{-1, 1LL << 40}));
  // Little-endian: bytes 00 3C are half 1.0.
  EXPECT_EQ(raw(TensorProto::FLOAT16, {1}, std::string("\x00\x3c", 2)).getDouble(0), 1.0);
  EXPECT_EQ(valuesOf<uint8_t>(raw(TensorProto::BOOL, {3}, std::string("\x01\x00\x07", 3))),
            (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(valuesOf<double>(raw(TensorProto::DOUBLE, {}, rawBytes<double>({2.5}))),
            (std::vector<double>{2.5}));
  Tensor empty = raw(TensorProto::FLOAT, {0, 3}, "");
  EXPECT_EQ(empty.elementCount(), 0);
}

// ---- external data ----------------------------------------------------------------------------

namespace {

ModelBuilder externalModel(const std::string &location, int64_t offset, int64_t length) {
  ModelBuilder m;
  auto *tensor = m.initializer("w", TensorProto::FLOAT, {2});
  tensor->set_data_location(TensorProto::EXTERNAL);
  auto add = [&](const std::string &key, const std::string &value) {
    auto *entry = tensor->add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  };
  add("location", location);
  if (offset >= 0)
    add("offset", std::to_string(offset));
  if (length >= 0)
    add("length", std::to_string(length));
  m.output("w");
  return m;
}

} // namespace

TEST(OnnxImport, ExternalDataInsideTheModelsFolder) {
  TempDir dir;
  dir.write("weights/w.bin", "PAD!" + rawBytes<float>({3.5f, -1.0f}));
  std::string path = dir.write("model.onnx", externalModel("weights/w.bin", 4, 8).bytes());
  auto graph = sinter::onnx::importModel(path);
  EXPECT_EQ(valuesOf<float>(graph->outputs()[0]->constant()), (std::vector<float>{3.5f, -1.0f}));
  // A '..' that stays inside the folder is fine.
  path = dir.write("m2.onnx", externalModel("weights/../weights/w.bin", 4, -1).bytes());
  EXPECT_EQ(valuesOf<float>(sinter::onnx::importModel(path)->outputs()[0]->constant()),
            (std::vector<float>{3.5f, -1.0f}));
}

TEST(OnnxImport, ExternalDataOutOfRangeOrOutsideTheFolderIsAUserError) {
  TempDir dir;
  dir.write("model/w.bin", rawBytes<float>({1.0f, 2.0f}));
  dir.write("outside.bin", rawBytes<float>({1.0f, 2.0f}));
  auto message = [&](const std::string &location, int64_t offset, int64_t length) {
    std::string path =
        dir.write("model/model.onnx", externalModel(location, offset, length).bytes());
    return userErrorOf([&] { sinter::onnx::importModel(path); });
  };
  EXPECT_CONTAINS(message("w.bin", 4, -1),
                  "external data range [4, 12) is out of range of 'w.bin' (8 bytes)");
  EXPECT_CONTAINS(message("w.bin", 0, 4), "external data length is 4 bytes, but f32[2] needs 8");
  EXPECT_CONTAINS(message("missing.bin", 0, -1), "external data file 'missing.bin' does not exist");
  EXPECT_CONTAINS(message("../outside.bin", 0, -1),
                  "external data location '../outside.bin' leaves the model's folder");
  std::string absolute = dir.file("outside.bin");
  EXPECT_CONTAINS(message(absolute, 0, -1), "is an absolute path");
  fs::create_symlink(absolute, dir.file("model/link.bin"));
  EXPECT_CONTAINS(message("link.bin", 0, -1), "leaves the model's folder through a symbolic link");
  // From memory there is no folder, so external data is refused.
  std::string fromMemory = userErrorOf([&] { externalModel("w.bin", 0, -1).import(); });
  EXPECT_CONTAINS(fromMemory,
                  "initializer 'w' keeps its data in an external file, which is not allowed here");
}

// ---- graph inputs and options ----------------------------------------------------------------

TEST(OnnxImport, SymbolicUnknownAndStaticDims) {
  ModelBuilder m;
  m.inputF32("x", {std::string("batch"), 3, ModelBuilder::kUnknownDim});
  m.inputF32("y", {std::string("batch")});
  m.output("x");
  m.output("y");
  auto graph = m.import();
  ASSERT_EQ(graph->inputs().size(), 2u);
  EXPECT_EQ(graph->inputs()[0]->type().str(), "f32[batch,3,?]");

  sinter::onnx::ImportOptions bound;
  bound.dimBindings["batch"] = 4;
  graph = m.import(bound);
  EXPECT_EQ(graph->inputs()[0]->type().str(), "f32[4,3,?]");
  EXPECT_EQ(graph->inputs()[1]->type().str(), "f32[4]");

  // --shape fixes a whole shape and binds the symbols it covers everywhere.
  sinter::onnx::ImportOptions shaped;
  shaped.inputShapes["x"] = {2, 3, 5};
  graph = m.import(shaped);
  EXPECT_EQ(graph->inputs()[0]->type().str(), "f32[2,3,5]");
  EXPECT_EQ(graph->inputs()[1]->type().str(), "f32[2]");
}

TEST(OnnxImport, BadShapeOptionsAreUserErrorsListingValidNames) {
  ModelBuilder m;
  m.inputF32("x", {std::string("batch"), 3});
  m.inputF32("mask", {std::string("seq")});
  m.output("x");
  m.output("mask");
  auto message = [&](sinter::onnx::ImportOptions options) {
    return userErrorOf([&] { m.import(options); });
  };
  sinter::onnx::ImportOptions unknownInput;
  unknownInput.inputShapes["image"] = {1, 3};
  EXPECT_CONTAINS(message(unknownInput),
                  "--shape names 'image', which is not a graph input; the inputs are 'x', 'mask'");
  sinter::onnx::ImportOptions unknownSymbol;
  unknownSymbol.dimBindings["batchsize"] = 1;
  EXPECT_CONTAINS(message(unknownSymbol), "--dim names 'batchsize', which is not a symbolic dim of "
                                          "any graph input; the symbols are 'batch', 'seq'");
  sinter::onnx::ImportOptions wrongRank;
  wrongRank.inputShapes["x"] = {1, 3, 1};
  EXPECT_CONTAINS(message(wrongRank),
                  "--shape x=[1,3,1] has rank 3, but the model declares [batch,3]");
  sinter::onnx::ImportOptions wrongDim;
  wrongDim.inputShapes["x"] = {1, 4};
  EXPECT_CONTAINS(message(wrongDim),
                  "--shape x=[1,4] does not match the model's [batch,3] at dim 1");
  sinter::onnx::ImportOptions conflict;
  conflict.inputShapes["x"] = {2, 3};
  conflict.dimBindings["batch"] = 5;
  EXPECT_CONTAINS(message(conflict), "symbol 'batch' is 5 elsewhere");
}

TEST(OnnxImport, InputWithoutShapeNeedsTheShapeOption) {
  ModelBuilder m;
  m.inputF32("x", {})->mutable_type()->mutable_tensor_type()->clear_shape();
  m.output("x");
  EXPECT_CONTAINS(userErrorOf([&] { m.import(); }),
                  "graph input 'x' has no shape (its rank is unknown); give it with --shape x=...");
  sinter::onnx::ImportOptions options;
  options.inputShapes["x"] = {2, 2};
  EXPECT_EQ(m.import(options)->inputs()[0]->type().str(), "f32[2,2]");
}

TEST(OnnxImport, InitializersListedAsInputsAreConstants) {
  ModelBuilder m(9);
  m.model.set_ir_version(3);
  m.inputF32("x", {2});
  m.inputF32("w", {2}); // IR version < 4: initializers are also listed as graph inputs
  m.initializerF32("w", {2}, {1, 2});
  m.output("x");
  m.output("w");
  auto graph = m.import();
  ASSERT_EQ(graph->inputs().size(), 1u);
  EXPECT_EQ(graph->inputs()[0]->name(), "x");
  EXPECT_TRUE(graph->outputs()[1]->isConstant());
  EXPECT_EQ(graph->outputs()[1]->name(), "w");
}

// ---- summary and tensor files -------------------------------------------------------------------

TEST(OnnxImport, SummaryDoesNotFailOnUnsupportedOps) {
  ModelBuilder m;
  m.model.set_producer_version("2.1");
  m.inputF32("x", {std::string("n"), 4});
  m.input("names", TensorProto::STRING, {3});
  m.initializerF32("w", {2, 2}, {1, 2, 3, 4});
  m.initializerI64("k", {3}, {1, 2, 3});
  m.node("Relu", {"x"}, {"r"});
  m.node("Relu", {"r"}, {"r2"});
  m.node("Inverse", {"r2"}, {"i"}, "", "com.microsoft");
  m.output("i");
  TempDir dir;
  sinter::onnx::ModelSummary summary = sinter::onnx::summarizeModel(dir.write("m.onnx", m.bytes()));
  EXPECT_EQ(summary.opset, 17);
  EXPECT_EQ(summary.producer, "sinter-test 2.1");
  ASSERT_EQ(summary.inputs.size(), 2u);
  EXPECT_EQ(summary.inputs[0].type, "f32[n,4]");
  EXPECT_EQ(summary.inputs[1].type, "tensor(string)[3]");
  EXPECT_EQ(summary.outputs[0].type, "?");
  EXPECT_EQ(summary.opHistogram["Relu"], 2);
  EXPECT_EQ(summary.opHistogram["com.microsoft:Inverse"], 1);
  EXPECT_EQ(summary.parameterCount, 4 + 3);
  EXPECT_EQ(summary.parameterBytes, 4 * 4 + 3 * 8);
  ASSERT_EQ(summary.unsupportedOps.size(), 1u);
  EXPECT_EQ(summary.unsupportedOps["com.microsoft:Inverse (opset ?)"], 1);
  std::string broken = dir.write("broken.onnx", std::string("\xff\xff\xff", 3));
  EXPECT_CONTAINS(userErrorOf([&] { sinter::onnx::summarizeModel(broken); }),
                  "not a valid ONNX model");
}

TEST(OnnxImport, TensorProtoFilesRoundTrip) {
  TempDir dir;
  Tensor tensor(DType::Int32, {2, 3});
  for (int i = 0; i < 6; ++i)
    tensor.setInt(i, i * 7 - 20);
  std::string path = dir.file("t.pb");
  sinter::onnx::writeTensorProtoFile(path, tensor);
  EXPECT_TRUE(sinter::onnx::readTensorProtoFile(path).identical(tensor));
  EXPECT_CONTAINS(userErrorOf([&] { sinter::onnx::readTensorProtoFile(dir.file("none.pb")); }),
                  "no such file");
}

TEST(OnnxImport, ReadsOnnxTestDataFiles) {
  // ONNX's own test data for Exp: output_0 must be exp(input_0), read independently.
  fs::path data = fs::path(SINTER_SOURCE_DIR) / ".venv/lib";
  fs::path found;
  if (fs::exists(data))
    for (const auto &entry : fs::directory_iterator(data)) {
      fs::path candidate = entry.path() / "site-packages/onnx/backend/test/data/pytorch-operator/"
                                          "test_operator_exp/test_data_set_0";
      if (fs::exists(candidate))
        found = candidate;
    }
  ASSERT_FALSE(found.empty()) << "ONNX test data not found under " << data
                              << " (run scripts/setup)";
  Tensor input = sinter::onnx::readTensorProtoFile((found / "input_0.pb").string());
  Tensor output = sinter::onnx::readTensorProtoFile((found / "output_0.pb").string());
  ASSERT_EQ(input.dims(), output.dims());
  ASSERT_GT(input.elementCount(), 0);
  for (int64_t i = 0; i < input.elementCount(); ++i)
    EXPECT_NEAR(output.getDouble(i), std::exp(input.getDouble(i)),
                1e-5 * std::exp(input.getDouble(i)));
}

// ---- bound inputs (--bind-input) ----------------------------------------------------------------

TEST(OnnxImport, BoundInputsBecomeConstantsAndResolveShapes) {
  ModelBuilder m;
  m.inputF32("x", {std::string("n"), 6});
  m.input("shape", ::onnx::TensorProto::INT64, {2});
  m.node("Reshape", {"x", "shape"}, {"y"});
  m.output("y");
  sinter::onnx::ImportOptions options;
  options.dimBindings["n"] = 2;
  EXPECT_EQ(m.import(options)->outputs()[0]->type().str(), "f32[?,?]");
  options.boundInputs["shape"] = {Tensor::fromInts({3, 4}), "--bind-input shape=s.npy"};
  auto graph = m.import(options);
  ASSERT_EQ(graph->inputs().size(), 1u);
  EXPECT_EQ(graph->inputs()[0]->name(), "x");
  EXPECT_EQ(graph->outputs()[0]->type().str(), "f32[3,4]");
  Value *shape = graph->findValue("shape");
  ASSERT_NE(shape, nullptr);
  ASSERT_TRUE(shape->isConstant());
  EXPECT_EQ(shape->constant().toInts(), (std::vector<int64_t>{3, 4}));
}

TEST(OnnxImport, ABoundValueBindsTheSymbolsOfItsDeclaredShape) {
  ModelBuilder m;
  m.inputF32("x", {std::string("n"), 4});
  m.inputF32("b", {std::string("n")});
  m.output("x");
  m.output("b");
  sinter::onnx::ImportOptions options;
  options.boundInputs["b"] = {Tensor(DType::Float32, {3}), "--bind-input b=b.npy"};
  EXPECT_EQ(m.import(options)->inputs()[0]->type().str(), "f32[3,4]");
  options.dimBindings["n"] = 5;
  EXPECT_CONTAINS(userErrorOf([&] { m.import(options); }),
                  "--bind-input b=b.npy: graph input 'b' is f32[n] but the value is f32[3], which "
                  "makes 'n' 3 where it is 5 elsewhere");
}

TEST(OnnxImport, BadBindingsAreUserErrorsNamingTheFlag) {
  ModelBuilder m(9);
  m.model.set_ir_version(3);
  m.inputF32("x", {2, 3});
  m.inputF32("w", {2}); // IR version < 4: an initializer listed as an input has a default
  m.initializerF32("w", {2}, {1, 2});
  m.output("x");
  m.output("w");
  auto message = [&](const std::string &name, Tensor value, bool withShape = false) {
    sinter::onnx::ImportOptions options;
    options.boundInputs[name] = {std::move(value), "--bind-input " + name + "=v.npy"};
    if (withShape)
      options.inputShapes[name] = {2, 3};
    return userErrorOf([&] { m.import(options); });
  };
  EXPECT_CONTAINS(message("y", Tensor(DType::Float32, {2, 3})),
                  "--bind-input y=v.npy: the model has no graph input named 'y'; the inputs are 'x'");
  EXPECT_CONTAINS(message("w", Tensor(DType::Float32, {2})),
                  "'w' has a value in the model already (an initializer)");
  EXPECT_CONTAINS(message("x", Tensor(DType::Float64, {2, 3})),
                  "graph input 'x' is f32[2,3] but the value is f64[2,3]");
  EXPECT_CONTAINS(message("x", Tensor(DType::Float32, {6})), "(rank 2) but the value is f32[6] (rank 1)");
  EXPECT_CONTAINS(message("x", Tensor(DType::Float32, {2, 4})), "(dim 1 must be 3)");
  EXPECT_CONTAINS(message("x", Tensor(DType::Float32, {2, 3}), true), "--shape also gives input 'x'");
}
