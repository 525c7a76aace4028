// Building a layer's per-op rule table family by family (ops.def's Family column). Shape
// inference, the reference evaluator and lowering each register their rules through one
// function per family file (lib/ir/infer_<family>*.cpp, lib/reference/<family>*.cpp,
// lib/codegen/lowering/lower_<family>*.cpp); while a family's functions run, the table admits
// only that family's ops, so an op's rules cannot drift into another family's files unnoticed.
#pragma once

#include "sinter/ir/op.h"

#include <optional>

namespace sinter {

class FamilyRegistrar {
public:
  /// `layer` names the table in errors: "inference", "reference", "lowering".
  explicit FamilyRegistrar(const char *layer) : layer_(layer) {}

  /// Runs `registerRules(table)` as `family`'s registration.
  template <typename Table> void run(Table &table, OpFamily family, void (*registerRules)(Table &)) {
    family_ = family;
    registerRules(table);
    family_.reset();
  }

  /// For a table's add: an internal error unless a family's registration is running and `kind`
  /// is of that family.
  void admit(OpKind kind) const;

private:
  const char *layer_;
  std::optional<OpFamily> family_;
};

} // namespace sinter
