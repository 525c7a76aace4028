#include "handles.h"

#include "model.h"
#include "pool.h"
#include "session.h"

namespace sinter::rt {
namespace {

constexpr uint8_t kModelTag = 0x4D;   // 'M'
constexpr uint8_t kSessionTag = 0x53; // 'S'
constexpr uint8_t kPoolTag = 0x50;    // 'P'

// Never destroyed: a handle freed from another static destructor at exit still finds its table.
HandleTable<const LoadedArtifact> &modelTable() {
  static auto *table = new HandleTable<const LoadedArtifact>(kModelTag);
  return *table;
}

HandleTable<sinter_session> &sessionTable() {
  static auto *table = new HandleTable<sinter_session>(kSessionTag);
  return *table;
}

HandleTable<SessionPool> &poolTable() {
  static auto *table = new HandleTable<SessionPool>(kPoolTag);
  return *table;
}

std::shared_ptr<sinter_session> findSession(sinter_session *handle) {
  if (!handle)
    fail(SINTER_ERROR_INVALID_ARGUMENT, "the session handle is null");
  std::shared_ptr<sinter_session> session =
      sessionTable().find(reinterpret_cast<uintptr_t>(handle));
  if (!session)
    fail(SINTER_ERROR_INVALID_ARGUMENT,
         "the session handle is not a live sinter_session (destroyed, or never created)");
  return session;
}

} // namespace

uintptr_t encodeHandle(HandleBits bits) {
  return uintptr_t(bits.tag) | (uintptr_t(bits.index & 0xFFFFFFu) << 8) |
         (uintptr_t(bits.generation) << 32);
}

HandleBits decodeHandle(uintptr_t value) {
  return {uint8_t(value & 0xFF), uint32_t((value >> 8) & 0xFFFFFF), uint32_t(value >> 32)};
}

ExclusiveUse::ExclusiveUse(std::atomic<bool> &inUse, const char *what) : inUse_(inUse) {
  bool expected = false;
  if (!inUse_.compare_exchange_strong(expected, true, std::memory_order_acquire))
    fail(SINTER_ERROR_BUSY, what,
         " is in use by another thread: a session serves one call at a time (create one per "
         "thread)");
}

ExclusiveUse::~ExclusiveUse() { inUse_.store(false, std::memory_order_release); }

sinter_model *issueModelHandle(std::shared_ptr<const LoadedArtifact> artifact) {
  return reinterpret_cast<sinter_model *>(modelTable().insert(std::move(artifact)));
}

std::shared_ptr<const LoadedArtifact> findModel(const sinter_model *model) {
  if (!model)
    fail(SINTER_ERROR_INVALID_ARGUMENT, "the model handle is null");
  std::shared_ptr<const LoadedArtifact> artifact =
      modelTable().find(reinterpret_cast<uintptr_t>(model));
  if (!artifact)
    fail(SINTER_ERROR_INVALID_ARGUMENT,
         "the model handle is not a live sinter_model (freed, or never loaded)");
  return artifact;
}

void releaseModelHandle(sinter_model *model) {
  modelTable().remove(reinterpret_cast<uintptr_t>(model));
}

sinter_session *issueSessionHandle(std::shared_ptr<sinter_session> session) {
  return reinterpret_cast<sinter_session *>(sessionTable().insert(std::move(session)));
}

void releaseSessionHandle(sinter_session *session) {
  // The last reference may be a running call's SessionUse: the session dies when it returns.
  sessionTable().remove(reinterpret_cast<uintptr_t>(session));
}

sinter_pool *issuePoolHandle(std::shared_ptr<SessionPool> pool) {
  return reinterpret_cast<sinter_pool *>(poolTable().insert(std::move(pool)));
}

std::shared_ptr<SessionPool> findPool(const sinter_pool *pool) {
  if (!pool)
    fail(SINTER_ERROR_INVALID_ARGUMENT, "the pool handle is null");
  std::shared_ptr<SessionPool> found = poolTable().find(reinterpret_cast<uintptr_t>(pool));
  if (!found)
    fail(SINTER_ERROR_INVALID_ARGUMENT,
         "the pool handle is not a live sinter_pool (freed, or never created)");
  return found;
}

void releasePoolHandle(sinter_pool *pool) { poolTable().remove(reinterpret_cast<uintptr_t>(pool)); }

SessionUse::SessionUse(sinter_session *handle)
    : session_(findSession(handle)), use_(session_->inUse, "the session") {}

} // namespace sinter::rt
