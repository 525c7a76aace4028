// The blob object: an LLVM module with one constant global (the serialized manifest) and the
// function that returns it, emitted to an ELF object by the x86-64 backend. The module's source
// name is fixed and no debug info or identification metadata is added, so nothing in the object
// depends on where or when it was made.
#include "blob_object.h"

#include "sinter/package/manifest.h"
#include "sinter/support/error.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

#include <memory>
#include <mutex>

namespace sinter::package {
namespace {

constexpr const char *kTriple = "x86_64-unknown-linux-gnu";
/// The blob is page-aligned, which keeps the weights (at a multiple of kWeightAlignment inside
/// it) aligned in memory once model.so is mapped.
constexpr uint64_t kBlobAlignment = 4096;
static_assert(kBlobAlignment % kWeightAlignment == 0);

void initializeX86Backend() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
  });
}

llvm::Constant *byteArray(llvm::LLVMContext &context, std::span<const uint8_t> bytes) {
  return llvm::ConstantDataArray::getRaw(
      llvm::StringRef(reinterpret_cast<const char *>(bytes.data()), bytes.size()), bytes.size(),
      llvm::Type::getInt8Ty(context));
}

/// `const void *sinter_artifact(uint64_t *size)`: stores the blob's size when `size` is not
/// null and returns the blob.
void defineAccessor(llvm::Module &module, llvm::GlobalVariable *blob, uint64_t blobBytes) {
  llvm::LLVMContext &context = module.getContext();
  auto *pointerType = llvm::PointerType::get(context, 0);
  auto *type = llvm::FunctionType::get(pointerType, {pointerType}, false);
  auto *function = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage,
                                          "sinter_artifact", module);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::Argument *size = function->getArg(0);
  size->setName("size");

  auto *entry = llvm::BasicBlock::Create(context, "entry", function);
  auto *store = llvm::BasicBlock::Create(context, "store", function);
  auto *done = llvm::BasicBlock::Create(context, "done", function);
  llvm::IRBuilder<> builder(entry);
  builder.CreateCondBr(builder.CreateIsNotNull(size), store, done);
  builder.SetInsertPoint(store);
  builder.CreateAlignedStore(builder.getInt64(blobBytes), size, llvm::Align(8));
  builder.CreateBr(done);
  builder.SetInsertPoint(done);
  builder.CreateRet(blob);
}

} // namespace

void emitBlobObject(std::span<const uint8_t> head, std::span<const uint8_t> weights,
                    const std::string &path) {
  initializeX86Backend();
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(kTriple, error);
  SINTER_ASSERT(target, "the LLVM x86-64 backend is missing: ", error);
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      kTriple, "x86-64", "", options, llvm::Reloc::PIC_, llvm::CodeModel::Small,
      llvm::CodeGenOptLevel::Default));
  SINTER_ASSERT(machine, "could not create an x86-64 target machine");

  llvm::LLVMContext context;
  llvm::Module module("sinter_artifact", context);
  module.setSourceFileName("sinter_artifact");
  module.setTargetTriple(kTriple);
  module.setDataLayout(machine->createDataLayout());
  module.setPICLevel(llvm::PICLevel::BigPIC);

  // Head and weights as two fields of one packed struct, so the (large) weights are not copied
  // into a joined buffer first.
  llvm::Constant *initializer = byteArray(context, head);
  if (!weights.empty())
    initializer =
        llvm::ConstantStruct::getAnon({initializer, byteArray(context, weights)}, /*Packed=*/true);
  auto *blob = new llvm::GlobalVariable(module, initializer->getType(), /*isConstant=*/true,
                                        llvm::GlobalValue::PrivateLinkage, initializer,
                                        "sinter_artifact_blob");
  blob->setAlignment(llvm::Align(kBlobAlignment));
  blob->setSection(".sinter_artifact");
  defineAccessor(module, blob, head.size() + weights.size());

  std::string verifierMessage;
  llvm::raw_string_ostream verifierStream(verifierMessage);
  SINTER_ASSERT(!llvm::verifyModule(module, &verifierStream), "blob module is invalid: ",
                verifierMessage);

  std::error_code errorCode;
  llvm::raw_fd_ostream out(path, errorCode, llvm::sys::fs::OF_None);
  if (errorCode)
    userError("cannot write '", path, "': ", errorCode.message());
  llvm::legacy::PassManager passes;
  SINTER_ASSERT(!machine->addPassesToEmitFile(passes, out, nullptr,
                                              llvm::CodeGenFileType::ObjectFile),
                "the x86-64 backend cannot emit object files");
  passes.run(module);
  out.close();
  if (out.has_error()) {
    std::string message = out.error().message();
    out.clear_error(); // a stream destroyed with an error pending aborts the process
    userError("cannot write '", path, "': ", message);
  }
}

} // namespace sinter::package
