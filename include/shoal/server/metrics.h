// Metrics in the Prometheus text exposition format, version 0.0.4.
//
// A MetricsRegistry owns counters, gauges and histograms, each named by a
// family name and a set of labels; asking again for the same name and labels
// returns the same object, so callers look metrics up once and keep the
// reference. Values computed only when scraped (an origin client's byte
// counters, a cache's size) come from collectors, which write them into a
// MetricsWriter during Render().
//
//   Counter& uploads = registry.counter("shoal_uploads_total", "Chunks uploaded.");
//   uploads.Increment();
//
// Names must match [a-zA-Z_:][a-zA-Z0-9_:]* and label names
// [a-zA-Z_][a-zA-Z0-9_]*; a bad name, or one name used for two types, is a
// programming error and throws std::invalid_argument.
#ifndef SHOAL_SERVER_METRICS_H_
#define SHOAL_SERVER_METRICS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace shoal {

// Label name to value. Values may hold any bytes; they are escaped on output.
using MetricLabels = std::map<std::string, std::string>;

// A monotonically increasing count. Thread-safe and lock-free.
class Counter {
 public:
  void Increment(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// A value that goes up and down. Thread-safe and lock-free.
class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double delta);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Observations counted into fixed buckets. Thread-safe and lock-free.
class Histogram {
 public:
  // REQUIRES: `upper_bounds` strictly increasing and finite; +Inf is implied.
  explicit Histogram(std::vector<double> upper_bounds);

  // Prometheus' default latency buckets in seconds, 0.005 to 10.
  static std::vector<double> DefaultBuckets();
  // `count` bounds: start, start*factor, start*factor^2, ...
  static std::vector<double> ExponentialBuckets(double start, double factor, int count);

  void Observe(double v);

  const std::vector<double>& upper_bounds() const { return bounds_; }
  // Non-cumulative count of bucket i; i == upper_bounds().size() is +Inf.
  uint64_t bucket_count(size_t i) const { return counts_[i].load(std::memory_order_relaxed); }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  double sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // bounds_.size() + 1 entries
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

// Collects samples for one Render(); HELP and TYPE are written once per family
// and families come out sorted by name.
//
// Thread-safety: used by one thread at a time.
class MetricsWriter {
 public:
  void AddCounter(std::string_view name, std::string_view help, double value,
                  const MetricLabels& labels = {});
  void AddGauge(std::string_view name, std::string_view help, double value,
                const MetricLabels& labels = {});
  void AddHistogram(std::string_view name, std::string_view help, const Histogram& h,
                    const MetricLabels& labels = {});

  // The exposition text of everything added so far.
  std::string Text() const;

 private:
  struct Family {
    std::string help;
    const char* type;
    std::string samples;  // complete sample lines
  };
  // Null if `name` already holds a family of another type; the sample is then
  // dropped, since a scrape must not fail.
  Family* FamilyFor(std::string_view name, std::string_view help, const char* type);

  std::map<std::string, Family, std::less<>> families_;
};

// Thread-safety: all methods may be called from any thread. Returned
// references stay valid for the registry's lifetime.
class MetricsRegistry {
 public:
  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  Counter& counter(const std::string& name, const std::string& help,
                   const MetricLabels& labels = {});
  Gauge& gauge(const std::string& name, const std::string& help, const MetricLabels& labels = {});
  // The bounds of the first call for a name and labels win.
  Histogram& histogram(const std::string& name, const std::string& help,
                       std::vector<double> upper_bounds = Histogram::DefaultBuckets(),
                       const MetricLabels& labels = {});

  // `collector` runs on every Render(), outside the registry's lock, possibly
  // on several threads at once; it must be thread-safe.
  void AddCollector(std::function<void(MetricsWriter&)> collector);

  std::string Render() const;

 private:
  struct Family;
  Family& FamilyFor(const std::string& name, const std::string& help, int type,
                    const MetricLabels& labels);

  mutable std::mutex mu_;
  // Protected by mu_.
  std::map<std::string, std::unique_ptr<Family>> families_;
  std::vector<std::function<void(MetricsWriter&)>> collectors_;
};

// True if `name` is a valid metric name, or label name.
bool IsValidMetricName(std::string_view name);
bool IsValidLabelName(std::string_view name);

}  // namespace shoal

#endif  // SHOAL_SERVER_METRICS_H_
