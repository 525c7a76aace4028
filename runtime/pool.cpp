#include "pool.h"

#include "status.h"

namespace sinter::rt {

/// A taken session, put back when the call ends (by return or by exception).
class SessionPool::Lease {
public:
  explicit Lease(SessionPool &pool) : pool_(pool), session_(pool.acquire()) {}
  ~Lease() { pool_.release(session_); }
  Lease(const Lease &) = delete;
  Lease &operator=(const Lease &) = delete;
  sinter_session &session() { return session_; }

private:
  SessionPool &pool_;
  sinter_session &session_;
};

SessionPool::SessionPool(std::shared_ptr<const LoadedArtifact> artifact,
                         const sinter_pool_options &options, int32_t maxSessions)
    : artifact_(std::move(artifact)), sessionOptions_(options.session),
      failWhenBusy_(options.when_busy == SINTER_POOL_FAIL), maxSessions_(maxSessions) {
  if (maxSessions < 1 || maxSessions > kMaxSessions)
    fail(SINTER_ERROR_INVALID_ARGUMENT, "max_sessions is ", maxSessions, "; it must be 1 to ",
         kMaxSessions);
  if (options.when_busy != SINTER_POOL_WAIT && options.when_busy != SINTER_POOL_FAIL)
    fail(SINTER_ERROR_INVALID_ARGUMENT, "when_busy is ", options.when_busy,
         "; use SINTER_POOL_WAIT (0) or SINTER_POOL_FAIL (1)");
}

SessionPool::~SessionPool() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return taken_ == 0 && creating_ == 0; });
}

sinter_session &SessionPool::acquire() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!free_.empty() && waiters_.empty()) {
    sinter_session *session = free_.back();
    free_.pop_back();
    ++taken_;
    return *session;
  }
  if (int32_t(sessions_.size()) + creating_ >= maxSessions_) {
    if (failWhenBusy_)
      fail(SINTER_ERROR_BUSY, "all ", maxSessions_, " sessions of the pool are in use");
    // Wait in line: a returned session goes to the longest waiter, so no caller starves (a
    // condition variable alone wakes an arbitrary one, which left some callers waiting for tens
    // of others' runs).
    Waiter me;
    waiters_.push_back(&me);
    me.ready.wait(lock, [&] { return me.session || me.mayCreate; });
    if (me.session)
      return *me.session; // handed over still counted in taken_
  }
  // Make a session outside the lock: it may take long (a CUDA device's first session loads
  // kernels and uploads weights), and other calls may go on with the sessions that exist.
  ++creating_;
  lock.unlock();
  std::unique_ptr<sinter_session> made;
  try {
    made = createSession(artifact_, sessionOptions_);
  } catch (...) {
    lock.lock();
    --creating_;
    if (!waiters_.empty()) { // the longest waiter may make one in its place
      Waiter *next = waiters_.front();
      waiters_.pop_front();
      next->mayCreate = true;
      next->ready.notify_one();
    }
    changed_.notify_all();
    throw;
  }
  lock.lock();
  --creating_;
  sessions_.push_back(std::move(made));
  ++taken_;
  return *sessions_.back();
}

void SessionPool::release(sinter_session &session) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!waiters_.empty()) { // straight to the longest waiter; it stays taken
    Waiter *next = waiters_.front();
    waiters_.pop_front();
    next->session = &session;
    next->ready.notify_one(); // under the lock: `next` lives until it has seen this
    return;
  }
  free_.push_back(&session);
  --taken_;
  changed_.notify_all(); // the destructor's safeguard waits on it
}

void SessionPool::run(const sinter_tensor *inputs, int32_t inputCount, sinter_tensor *outputs,
                      int32_t outputCount, void *stream) {
  RunShape shape = validateRunArguments(*artifact_, inputs, inputCount, outputs, outputCount);
  Lease lease(*this);
  lease.session().run(shape, inputs, outputs, stream);
}

void SessionPool::runHost(const sinter_tensor *inputs, int32_t inputCount,
                          sinter_tensor *outputs, int32_t outputCount) {
  RunShape shape = validateRunArguments(*artifact_, inputs, inputCount, outputs, outputCount);
  Lease lease(*this);
  lease.session().runHost(shape, inputs, outputs);
}

int32_t SessionPool::sessionCount() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return int32_t(sessions_.size());
}

} // namespace sinter::rt
