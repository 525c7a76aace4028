// sinter_pool: sessions of one model handed to callers on any thread. A call takes a free session
// (making one when none is free and fewer than the maximum exist; else waiting for one, or failing
// with SINTER_ERROR_BUSY, as the options say), runs on it and puts it back, so a server's threads
// share the sessions without locking of their own. Waiters are served first come, first served: a
// returned session goes straight to the longest waiter. The lock guards only these lists: a
// session is made, and runs, outside it, so runs on different sessions overlap.
#pragma once

#include "model.h"
#include "session.h"

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace sinter::rt {

class SessionPool {
public:
  /// The most sessions one pool may make.
  static constexpr int32_t kMaxSessions = 4096;

  /// Checks the options (INVALID_ARGUMENT); makes no session yet.
  SessionPool(std::shared_ptr<const LoadedArtifact> artifact, const sinter_pool_options &options,
              int32_t maxSessions);
  /// Waits until every taken session is back (a safeguard: the caller frees the pool once its
  /// calls have returned), then destroys them all.
  ~SessionPool();
  SessionPool(const SessionPool &) = delete;
  SessionPool &operator=(const SessionPool &) = delete;

  /// sinter_session_run / _run_host on a free session; arguments are validated first.
  void run(const sinter_tensor *inputs, int32_t inputCount, sinter_tensor *outputs,
           int32_t outputCount, void *stream);
  void runHost(const sinter_tensor *inputs, int32_t inputCount, sinter_tensor *outputs,
               int32_t outputCount);
  /// Sessions made so far.
  int32_t sessionCount() const;

private:
  class Lease;
  /// A free session, taken out of the free list (made when allowed; else wait or BUSY).
  sinter_session &acquire();
  void release(sinter_session &session);

  std::shared_ptr<const LoadedArtifact> artifact_;
  sinter_session_options sessionOptions_;
  bool failWhenBusy_;
  int32_t maxSessions_;

  /// A caller waiting for a session, in line: release() hands it a session, or a failed creation
  /// the right to make one.
  struct Waiter {
    std::condition_variable ready;
    sinter_session *session = nullptr;
    bool mayCreate = false;
  };

  mutable std::mutex mutex_;
  std::condition_variable changed_; ///< a session came back free, or a creation ended
  std::deque<Waiter *> waiters_;    ///< oldest first
  std::vector<std::unique_ptr<sinter_session>> sessions_; ///< every session made
  std::vector<sinter_session *> free_;
  int32_t creating_ = 0; ///< sessions being made outside the lock
  int32_t taken_ = 0;    ///< sessions handed out and not yet back
};

} // namespace sinter::rt
