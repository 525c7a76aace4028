#include "sinter/reference/evaluator.h"
// Placeholder until the evaluator lands.
