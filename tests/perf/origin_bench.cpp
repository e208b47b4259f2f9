// Origin throughput benchmark (not a test): ranged GETs of one object with
// N requests in flight, or a streaming upload of it.
//
//   shoal_origin_bench put <size_mib>          uploads bench/object with PutStream
//   shoal_origin_bench get <in_flight> <range_mib>
//                                              reads bench/object in ranges
// The S3 origin comes from SHOAL_S3_ENV (the file radosgw.sh writes).
// Prints one line of key=value figures, including this process's CPU time.
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "shoal/origin.h"
#include "support/env_file.h"

using namespace shoal;

namespace {

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

class Discard : public ByteSink {
 public:
  Status Write(const uint8_t*, size_t len) override {
    bytes += len;
    return Status::OK();
  }
  uint64_t bytes = 0;
};

// Pseudo-random bytes, so compression or dedup cannot flatter the figures.
class PatternSource : public ByteSource {
 public:
  explicit PatternSource(uint64_t size) : left_(size) {}
  Result<size_t> Read(uint8_t* buf, size_t cap) override {
    size_t n = static_cast<size_t>(std::min<uint64_t>(cap, left_));
    for (size_t i = 0; i < n; ++i) {
      x_ = x_ * 6364136223846793005ull + 1442695040888963407ull;
      buf[i] = static_cast<uint8_t>(x_ >> 56);
    }
    left_ -= n;
    return n;
  }

 private:
  uint64_t left_;
  uint64_t x_ = 42;
};

}  // namespace

int main(int argc, char** argv) {
  auto env = shoal::testing::ReadEnvFile(std::getenv("SHOAL_S3_ENV"));
  if (argc < 3 || env.empty()) {
    std::fprintf(stderr,
                 "usage: SHOAL_S3_ENV=... %s put <size_mib> | get <in_flight> <range_mib>\n",
                 argv[0]);
    return 2;
  }
  OriginOptions o;
  o.url = "s3://" + env["SHOAL_S3_BUCKET"] + "/bench";
  o.endpoint = env["SHOAL_S3_ENDPOINT"];
  o.region = env["SHOAL_S3_REGION"];
  o.access_key = env["SHOAL_S3_ACCESS_KEY"];
  o.secret_key = env["SHOAL_S3_SECRET_KEY"];
  auto origin = OpenOrigin(o);
  if (!origin.ok()) {
    std::fprintf(stderr, "%s\n", origin.status().ToString().c_str());
    return 1;
  }
  const std::string mode = argv[1];
  const auto start = std::chrono::steady_clock::now();
  const double cpu0 = CpuSeconds();
  uint64_t bytes = 0;
  if (mode == "put") {
    bytes = std::strtoull(argv[2], nullptr, 10) << 20;
    PatternSource src(bytes);
    Status s = (*origin)->PutStream("object", src);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
  } else {
    const int in_flight = std::atoi(argv[2]);
    const uint64_t range = (argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 16) << 20;
    auto head = (*origin)->Head("object");
    if (!head.ok()) {
      std::fprintf(stderr, "%s\n", head.status().ToString().c_str());
      return 1;
    }
    const uint64_t size = head->size;
    const uint64_t ranges = (size + range - 1) / range;
    std::atomic<uint64_t> next{0}, total{0};
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < in_flight; ++t) {
      threads.emplace_back([&] {
        for (uint64_t i; (i = next.fetch_add(1)) < ranges;) {
          Discard sink;
          uint64_t off = i * range;
          Status s = (*origin)->Get("object", off, std::min(range, size - off), sink);
          if (!s.ok()) {
            std::fprintf(stderr, "%s\n", s.ToString().c_str());
            ++failures;
          }
          total += sink.bytes;
        }
      });
    }
    for (auto& th : threads) th.join();
    if (failures > 0) return 1;
    bytes = total;
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu = CpuSeconds() - cpu0;
  const double gib = static_cast<double>(bytes) / (1ull << 30);
  auto c = (*origin)->counters();
  std::printf(
      "mode=%s bytes=%llu seconds=%.3f MiB_per_s=%.1f cpu_s=%.3f cpu_s_per_GiB=%.3f "
      "requests=%llu retries=%llu\n",
      mode.c_str(), static_cast<unsigned long long>(bytes), secs,
      static_cast<double>(bytes) / (1 << 20) / secs, cpu, cpu / gib,
      static_cast<unsigned long long>(mode == "put" ? c.put.requests : c.get.requests),
      static_cast<unsigned long long>(mode == "put" ? c.put.retries : c.get.retries));
  return 0;
}
