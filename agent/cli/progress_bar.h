// A one-line progress bar on stderr: percentage, bytes, rate and ETA.
//
// Drawn only when stderr is a terminal (or when forced), so logs and CI
// output stay clean. Thread-safe: Update may be called from any thread.
#ifndef SHOAL_AGENT_CLI_PROGRESS_BAR_H_
#define SHOAL_AGENT_CLI_PROGRESS_BAR_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "shoal/byte_size.h"

namespace shoal {

class ProgressBar {
 public:
  // `label` prefixes the line ("hashing"); `total` is in bytes, or in
  // `unit`s ("chunks") if one is given.
  ProgressBar(std::string label, uint64_t total, std::string unit = "");
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Redraws at most ten times a second.
  void Update(uint64_t done);
  // The same, for work whose total is learnt as it goes.
  void Update(uint64_t done, uint64_t total);
  // Draws the final state and ends the line.
  void Finish();
  // Extra text after the rate, e.g. "3 peers, 12.0 MiB from origin".
  void SetDetail(std::string detail);

 private:
  void Draw(uint64_t done, bool final);

  std::string Amount(uint64_t n) const;

  const std::string label_;
  const std::string unit_;
  std::atomic<uint64_t> total_;
  const bool enabled_;
  const std::chrono::steady_clock::time_point start_;

  std::mutex mu_;
  std::chrono::steady_clock::time_point last_draw_;  // protected by mu_
  bool finished_ = false;                            // protected by mu_
  std::string detail_;                               // protected by mu_
};

}  // namespace shoal

#endif  // SHOAL_AGENT_CLI_PROGRESS_BAR_H_
