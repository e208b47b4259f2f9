// Fork-join loops: blocking calls that spread one batch of work over a few
// threads started for it and return once all of it is done. For work that
// outlives the call, or arrives over time, see WorkQueue (work_queue.h).
//
// Thread-safety: the callables run on several threads at once; they must
// synchronize what they share.
#ifndef SHOAL_PARALLEL_FOR_H_
#define SHOAL_PARALLEL_FOR_H_

#include <cstddef>
#include <functional>

namespace shoal {

// Runs `worker` on `threads` threads at once, the calling thread being one
// of them, and returns when every call has returned. Each worker typically
// takes items from a shared counter until none are left, keeping its own
// buffers between items. `threads` < 1 counts as 1.
void RunOnThreads(int threads, const std::function<void()>& worker);

// Calls fn(i) for every i in [0, n) on up to `parallelism` threads (never
// more than n); blocks until all calls have returned.
void ParallelFor(size_t n, int parallelism, const std::function<void(size_t)>& fn);

}  // namespace shoal

#endif  // SHOAL_PARALLEL_FOR_H_
