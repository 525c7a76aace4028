// Only for a static LLVM (SINTER_PORTABLE). Debian's LLVM links Polly into its tools, so LLD's
// LTO code refers to Polly's pass-plugin entry point, which exists in libLLVM-19.so but in no
// static library shipped. sinter never runs LTO; an empty plugin satisfies the reference.
#ifdef SINTER_LLVM_STATIC
#include <llvm/Passes/PassPlugin.h>

llvm::PassPluginLibraryInfo getPollyPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "polly-absent", "0", [](llvm::PassBuilder &) {}};
}
#endif
