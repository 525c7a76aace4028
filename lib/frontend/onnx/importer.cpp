#include "sinter/frontend/onnx.h"
// Placeholder until the importer lands.
