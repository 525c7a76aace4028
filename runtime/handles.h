// Handles the C ABI gives out: not addresses but slot numbers with a generation, so a null,
// freed, stale or forged handle is recognised without reading memory it names, and a handle
// whose slot was reused for a new object never reaches that object.
//
// A handle is 64 bits in the pointer-sized opaque value (sinter_model *, sinter_session *):
//   bits 0..7    the table's tag (one per handle kind, never 0, so no handle is null)
//   bits 8..31   the slot index (at most 2^24 live objects per kind)
//   bits 32..63  the slot's generation when the handle was issued
// Freeing a handle bumps its slot's generation, so every copy of the old value stops matching.
// A slot is reused only after every other free slot (first in, first out), and its generation
// wraps after 2^32 reuses of that one slot.
//
// Lookups give a shared_ptr: an object freed while another thread still uses it (a caller
// error) lives until that use ends, instead of being freed under it.
#pragma once

#include "status.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

namespace sinter::rt {

static_assert(sizeof(void *) == 8, "handles encode 64 bits in a pointer");

/// The parts of a handle value.
struct HandleBits {
  uint8_t tag = 0;
  uint32_t index = 0;
  uint32_t generation = 0;
};
uintptr_t encodeHandle(HandleBits bits);
HandleBits decodeHandle(uintptr_t value);

/// Objects of one kind behind handles. Thread-safe; slots are never freed, so a lookup never
/// touches memory that was released.
template <typename T> class HandleTable {
public:
  explicit HandleTable(uint8_t tag) : tag_(tag) {}
  HandleTable(const HandleTable &) = delete;
  HandleTable &operator=(const HandleTable &) = delete;

  /// Stores `object` (not null) and returns its handle. Throws OUT_OF_MEMORY when 2^24 objects
  /// are alive.
  uintptr_t insert(std::shared_ptr<T> object) {
    uint32_t index;
    {
      std::lock_guard<std::mutex> lock(tableMutex_);
      if (!freeSlots_.empty()) {
        index = freeSlots_.front();
        freeSlots_.pop_front();
      } else {
        if (issued_.load(std::memory_order_relaxed) == kChunks * kChunkSlots)
          fail(SINTER_ERROR_OUT_OF_MEMORY, "too many live handles (", kChunks * kChunkSlots, ")");
        index = issued_.load(std::memory_order_relaxed);
        if (index % kChunkSlots == 0)
          chunks_[index / kChunkSlots].store(new Chunk(), std::memory_order_release);
        issued_.store(index + 1, std::memory_order_release);
      }
    }
    Slot &slot = slotAt(index);
    std::lock_guard<std::mutex> lock(slot.mutex);
    slot.object = std::move(object);
    return encodeHandle({tag_, index, slot.generation});
  }

  /// The live object behind `handle`, or null when it is null, of another kind, freed, stale or
  /// never issued.
  std::shared_ptr<T> find(uintptr_t handle) const {
    Slot *slot = liveSlot(handle);
    if (!slot)
      return nullptr;
    std::lock_guard<std::mutex> lock(slot->mutex);
    if (slot->generation != decodeHandle(handle).generation)
      return nullptr;
    return slot->object;
  }

  /// Takes the object out (the handle and every copy of it stop working); null when `handle` is
  /// not live, so freeing twice is harmless.
  std::shared_ptr<T> remove(uintptr_t handle) {
    Slot *slot = liveSlot(handle);
    if (!slot)
      return nullptr;
    std::shared_ptr<T> object;
    {
      std::lock_guard<std::mutex> lock(slot->mutex);
      if (slot->generation != decodeHandle(handle).generation || !slot->object)
        return nullptr;
      object = std::move(slot->object);
      slot->object.reset();
      ++slot->generation;
    }
    std::lock_guard<std::mutex> lock(tableMutex_);
    freeSlots_.push_back(decodeHandle(handle).index);
    return object;
  }

private:
  static constexpr uint32_t kChunkSlots = 4096;
  static constexpr uint32_t kChunks = (uint32_t(1) << 24) / kChunkSlots;
  struct Slot {
    std::mutex mutex;
    uint32_t generation = 0;
    std::shared_ptr<T> object;
  };
  using Chunk = std::array<Slot, kChunkSlots>;

  Slot &slotAt(uint32_t index) const {
    return (*chunks_[index / kChunkSlots].load(std::memory_order_acquire))[index % kChunkSlots];
  }
  Slot *liveSlot(uintptr_t handle) const {
    HandleBits bits = decodeHandle(handle);
    if (bits.tag != tag_ || bits.index >= issued_.load(std::memory_order_acquire))
      return nullptr;
    return &slotAt(bits.index);
  }

  const uint8_t tag_;
  std::mutex tableMutex_; ///< guards freeSlots_ and the growth of issued_
  std::deque<uint32_t> freeSlots_;
  std::atomic<uint32_t> issued_{0}; ///< slots [0, issued_) exist
  std::array<std::atomic<Chunk *>, kChunks> chunks_{};
};

/// Marks an object as used by one call; constructing a second one on the same flag while the
/// first lives fails with SINTER_ERROR_BUSY (naming `what`) instead of waiting or sharing.
class ExclusiveUse {
public:
  ExclusiveUse(std::atomic<bool> &inUse, const char *what);
  ~ExclusiveUse();
  ExclusiveUse(const ExclusiveUse &) = delete;
  ExclusiveUse &operator=(const ExclusiveUse &) = delete;

private:
  std::atomic<bool> &inUse_;
};

} // namespace sinter::rt

// The two kinds of the C ABI. Each entry point looks its handles up through these; a session pool
// or any other owner of models and sessions can too.
namespace sinter::rt {

struct LoadedArtifact;

/// A new handle for a loaded artifact.
sinter_model *issueModelHandle(std::shared_ptr<const LoadedArtifact> artifact);
/// The artifact behind a live model handle; throws INVALID_ARGUMENT for a null or dead one.
std::shared_ptr<const LoadedArtifact> findModel(const sinter_model *model);
/// Frees the handle (its artifact lives on while sessions use it); a dead handle is ignored.
void releaseModelHandle(sinter_model *model);

/// A new handle for a session.
sinter_session *issueSessionHandle(std::shared_ptr<sinter_session> session);
/// Frees the handle; a session another thread is still running is destroyed when that call
/// returns. A dead handle is ignored.
void releaseSessionHandle(sinter_session *session);

class SessionPool;

/// A new handle for a pool of sessions (pool.h).
sinter_pool *issuePoolHandle(std::shared_ptr<SessionPool> pool);
/// The pool behind a live handle; throws INVALID_ARGUMENT for a null or dead one. A call holds
/// the returned reference, so a pool freed while calls run goes when the last one returns.
std::shared_ptr<SessionPool> findPool(const sinter_pool *pool);
/// Frees the handle; a dead handle is ignored.
void releasePoolHandle(sinter_pool *pool);

/// One call's exclusive use of a session: looks the handle up (INVALID_ARGUMENT when null or
/// dead) and marks the session in use (SINTER_ERROR_BUSY when another thread is in a call on it).
class SessionUse {
public:
  explicit SessionUse(sinter_session *handle);
  sinter_session &operator*() const { return *session_; }
  sinter_session *operator->() const { return session_.get(); }

private:
  std::shared_ptr<sinter_session> session_;
  ExclusiveUse use_;
};

} // namespace sinter::rt
