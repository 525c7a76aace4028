// Op families (ops.def's Family column): each layer's rule table admits, while a family's
// registration runs, that family's ops alone; and every op belongs to exactly one family.
#include "sinter/ir/op_families.h"
#include "sinter/support/error.h"

#include <gtest/gtest.h>

#include <set>

namespace sinter {
namespace {

/// A rule table as each layer has one: add() asks the registrar.
struct FakeTable {
  FamilyRegistrar registrar{"test"};
  std::set<OpKind> added;
  void add(OpKind kind) {
    registrar.admit(kind);
    added.insert(kind);
  }
};

void registerSomeElementwise(FakeTable &table) {
  table.add(OpKind::Relu);
  table.add(OpKind::Add);
}
void registerAConvolutionAsElementwise(FakeTable &table) { table.add(OpKind::Conv); }

TEST(OpFamilies, ATableAdmitsTheRegisteringFamilysOps) {
  FakeTable table;
  table.registrar.run(table, OpFamily::Elementwise, registerSomeElementwise);
  EXPECT_EQ(table.added, (std::set<OpKind>{OpKind::Relu, OpKind::Add}));
}

TEST(OpFamilies, AnOpOfAnotherFamilyIsAnInternalErrorNamingBoth) {
  FakeTable table;
  try {
    table.registrar.run(table, OpFamily::Elementwise, registerAConvolutionAsElementwise);
    FAIL() << "Conv admitted by the elementwise family";
  } catch (const InternalError &error) {
    std::string message = error.what();
    EXPECT_NE(message.find("Conv"), std::string::npos) << message;
    EXPECT_NE(message.find("elementwise"), std::string::npos) << message;
    EXPECT_NE(message.find("convolution"), std::string::npos) << message;
  }
}

TEST(OpFamilies, AddingOutsideARegistrationIsAnInternalError) {
  FakeTable table;
  EXPECT_THROW(table.add(OpKind::Relu), InternalError);
}

TEST(OpFamilies, EveryFamilyHasOpsAndAFileStem) {
  std::set<OpFamily> used;
  for (int i = 0; i < kNumOps; ++i)
    used.insert(opFamily(static_cast<OpKind>(i)));
  EXPECT_EQ(int(used.size()), kNumOpFamilies);
  std::set<std::string> stems;
  for (int f = 0; f < kNumOpFamilies; ++f) {
    std::string stem(opFamilyName(static_cast<OpFamily>(f)));
    EXPECT_NE(stem, "?");
    EXPECT_EQ(stem.find_first_not_of("abcdefghijklmnopqrstuvwxyz_"), std::string::npos) << stem;
    stems.insert(stem);
  }
  EXPECT_EQ(int(stems.size()), kNumOpFamilies);
  // Spot checks of the partition that the layers' files follow.
  EXPECT_EQ(opFamily(OpKind::Conv), OpFamily::Convolution);
  EXPECT_EQ(opFamily(OpKind::MaxPool), OpFamily::Pooling);
  EXPECT_EQ(opFamily(OpKind::Slice), OpFamily::DataMovement);
  EXPECT_EQ(opFamily(OpKind::Gather), OpFamily::Indexing);
  EXPECT_EQ(opFamily(OpKind::BitCast), OpFamily::Elementwise);
}

} // namespace
} // namespace sinter
