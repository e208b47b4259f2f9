#include "cli/progress_bar.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace shoal {

namespace {
bool ProgressEnabled() {
  const char* force = std::getenv("SHOAL_PROGRESS");
  if (force != nullptr) return std::string(force) != "0";
  return ::isatty(STDERR_FILENO) == 1;
}
}  // namespace

ProgressBar::ProgressBar(std::string label, uint64_t total, std::string unit)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      enabled_(ProgressEnabled()),
      start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Update(uint64_t done) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto now = std::chrono::steady_clock::now();
  if (finished_ || now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  Draw(done, false);
}

void ProgressBar::Update(uint64_t done, uint64_t total) {
  total_ = total;
  Update(done);
}

void ProgressBar::SetDetail(std::string detail) {
  std::lock_guard<std::mutex> lock(mu_);
  detail_ = std::move(detail);
}

void ProgressBar::Finish() {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  finished_ = true;
  Draw(total_.load(), true);
}

std::string ProgressBar::Amount(uint64_t n) const {
  return unit_.empty() ? FormatBytes(n) : std::to_string(n) + " " + unit_;
}

void ProgressBar::Draw(uint64_t done, bool final) {
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const uint64_t total = total_;
  double frac = total == 0 ? 1.0 : static_cast<double>(done) / static_cast<double>(total);
  double rate = secs > 0 ? static_cast<double>(done) / secs : 0;
  constexpr int kWidth = 30;
  int filled = static_cast<int>(frac * kWidth);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '-');
  std::string eta = "--";
  if (rate > 0 && done < total) {
    eta = std::to_string(static_cast<long long>(static_cast<double>(total - done) / rate)) + "s";
  } else if (final) {
    eta = std::to_string(static_cast<long long>(secs)) + "s total";
  }
  std::fprintf(stderr, "\r%s [%s] %3d%% %s / %s  %s/s  eta %s%s%s\033[K%s", label_.c_str(),
               bar.c_str(), static_cast<int>(frac * 100), Amount(done).c_str(),
               Amount(total).c_str(), Amount(static_cast<uint64_t>(rate)).c_str(), eta.c_str(),
               detail_.empty() ? "" : "  ", detail_.c_str(), final ? "\n" : "");
  std::fflush(stderr);
}

}  // namespace shoal
