// Which graph inputs a value's data comes from. An ahead-of-time compile needs some inputs'
// data (a Reshape's shape, a reduction's axes, Trilu's k) at compile time; when that data comes
// from graph inputs, the user can give their values with `--bind-input NAME=FILE`, and the error
// says so, naming exactly those inputs:
//
//   y = Reshape(x, Concat(Shape(x), Cast(k)))   graphInputsFeeding(shape of y) = {k}
//
// Shape and Size read only their input's shape, never its data, so the walk stops there.
#pragma once

#include <string>
#include <vector>

namespace sinter {

class Value;

/// The graph inputs whose data `value`'s data is computed from, in the order a depth-first walk
/// over producers' inputs (in input order) first meets them; empty for a constant.
std::vector<const Value *> graphInputsFeeding(const Value &value);

/// The graph inputs feeding any of `values`, each once, in the same order.
std::vector<const Value *> graphInputsFeeding(const std::vector<const Value *> &values);

/// For an error message: "; it depends on graph input 'k': give its value at compile time with
/// --bind-input k=FILE" (or "inputs 'a', 'b' ... --bind-input a=FILE --bind-input b=FILE"), or
/// "" when `inputs` is empty.
std::string bindInputHint(const std::vector<const Value *> &inputs);

} // namespace sinter
