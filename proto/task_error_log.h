// TaskErrorLog: a kj::TaskSet error handler that logs each failed task as
// one structured log event, for task sets whose failures concern only the
// task itself (a dropped connection, a fetch order that went astray).
//
// Thread-safety: like the TaskSet it serves, used on one event loop.
#ifndef SHOAL_PROTO_TASK_ERROR_LOG_H_
#define SHOAL_PROTO_TASK_ERROR_LOG_H_

#include <kj/async.h>

#include <string>

#include "shoal/log.h"

namespace shoal {

class TaskErrorLog final : public kj::TaskSet::ErrorHandler {
 public:
  // Logs `event` at `level` with the exception's description as "error".
  // `event` must outlive this handler (a string literal does).
  TaskErrorLog(LogLevel level, const char* event) : level_(level), event_(event) {}

  void taskFailed(kj::Exception&& e) override {
    Log(level_, event_, {{"error", std::string(e.getDescription().cStr())}});
  }

 private:
  const LogLevel level_;
  const char* const event_;
};

}  // namespace shoal

#endif  // SHOAL_PROTO_TASK_ERROR_LOG_H_
