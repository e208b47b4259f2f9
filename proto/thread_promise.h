// PromiseFromThread: runs blocking work on another thread and hands its
// result back to the calling thread's kj event loop as a promise. What the
// tracker's BlockingPool and the agent's JobThreads share; they differ only
// in which thread runs the work.
//
// Thread-safety: call on a thread with a kj event loop; `fn` runs on
// whatever thread `post` hands it to, and the promise resolves on the
// calling loop. An exception thrown by `fn` rejects the promise.
#ifndef SHOAL_PROTO_THREAD_PROMISE_H_
#define SHOAL_PROTO_THREAD_PROMISE_H_

#include <kj/async.h>
#include <kj/debug.h>

#include <exception>
#include <functional>
#include <memory>
#include <utility>

namespace shoal {

// `post` is called once with a std::function<void()> to run elsewhere.
template <typename T, typename Post, typename Fn>
kj::Promise<T> PromiseFromThread(Post&& post, Fn fn) {
  auto paf = kj::newPromiseAndCrossThreadFulfiller<T>();
  // std::function needs a copyable callable; share the fulfiller.
  auto fulfiller =
      std::make_shared<kj::Own<kj::CrossThreadPromiseFulfiller<T>>>(kj::mv(paf.fulfiller));
  std::function<void()> job = [fn = std::move(fn), fulfiller]() mutable {
    try {
      (*fulfiller)->fulfill(fn());
    } catch (const kj::Exception& e) {
      (*fulfiller)->reject(kj::cp(e));
    } catch (const std::exception& e) {
      (*fulfiller)
          ->reject(
              kj::Exception(kj::Exception::Type::FAILED, __FILE__, __LINE__, kj::str(e.what())));
    }
  };
  std::forward<Post>(post)(std::move(job));
  return kj::mv(paf.promise);
}

}  // namespace shoal

#endif  // SHOAL_PROTO_THREAD_PROMISE_H_
