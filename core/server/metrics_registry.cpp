#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "shoal/server/metrics.h"

namespace shoal {
namespace {

enum Type { kCounter, kGauge, kHistogram };
const char* const kTypeNames[] = {"counter", "gauge", "histogram"};

void AtomicAdd(std::atomic<double>* a, double delta) {
  double old = a->load(std::memory_order_relaxed);
  while (!a->compare_exchange_weak(old, old + delta, std::memory_order_relaxed)) {
  }
}

}  // namespace

void Gauge::Add(double delta) { AtomicAdd(&value_, delta); }

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (!std::isfinite(bounds_[i]) || (i > 0 && bounds_[i] <= bounds_[i - 1])) {
      throw std::invalid_argument("histogram bounds must be finite and strictly increasing");
    }
  }
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0);
}

std::vector<double> Histogram::DefaultBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

std::vector<double> Histogram::ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> out;
  for (int i = 0; i < count; ++i, start *= factor) out.push_back(start);
  return out;
}

void Histogram::Observe(double v) {
  size_t i = size_t(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  AtomicAdd(&sum_, v);
  count_.fetch_add(1, std::memory_order_relaxed);
}

struct MetricsRegistry::Family {
  int type;
  std::string help;
  struct Series {
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<Histogram> histogram;
  };
  std::map<MetricLabels, Series> series;
};

MetricsRegistry::MetricsRegistry() = default;
MetricsRegistry::~MetricsRegistry() = default;

MetricsRegistry::Family& MetricsRegistry::FamilyFor(const std::string& name,
                                                    const std::string& help, int type,
                                                    const MetricLabels& labels) {
  if (!IsValidMetricName(name)) throw std::invalid_argument("invalid metric name '" + name + "'");
  for (const auto& label : labels) {
    if (!IsValidLabelName(label.first)) {
      throw std::invalid_argument("invalid label name '" + label.first + "' on metric " + name);
    }
  }
  auto it = families_.find(name);
  if (it == families_.end()) {
    it = families_.emplace(name, std::unique_ptr<Family>(new Family{type, help, {}})).first;
  }
  if (it->second->type != type) {
    throw std::invalid_argument("metric '" + name + "' is a " + kTypeNames[it->second->type] +
                                ", not a " + kTypeNames[type]);
  }
  return *it->second;
}

Counter& MetricsRegistry::counter(const std::string& name, const std::string& help,
                                  const MetricLabels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& s = FamilyFor(name, help, kCounter, labels).series[labels];
  if (!s.counter) s.counter.reset(new Counter);
  return *s.counter;
}

Gauge& MetricsRegistry::gauge(const std::string& name, const std::string& help,
                              const MetricLabels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& s = FamilyFor(name, help, kGauge, labels).series[labels];
  if (!s.gauge) s.gauge.reset(new Gauge);
  return *s.gauge;
}

Histogram& MetricsRegistry::histogram(const std::string& name, const std::string& help,
                                      std::vector<double> upper_bounds,
                                      const MetricLabels& labels) {
  if (labels.count("le") != 0) throw std::invalid_argument("a histogram may not use label 'le'");
  std::lock_guard<std::mutex> lock(mu_);
  auto& s = FamilyFor(name, help, kHistogram, labels).series[labels];
  if (!s.histogram) s.histogram.reset(new Histogram(std::move(upper_bounds)));
  return *s.histogram;
}

void MetricsRegistry::AddCollector(std::function<void(MetricsWriter&)> collector) {
  std::lock_guard<std::mutex> lock(mu_);
  collectors_.push_back(std::move(collector));
}

std::string MetricsRegistry::Render() const {
  MetricsWriter writer;
  std::vector<std::function<void(MetricsWriter&)>> collectors;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, family] : families_) {
      for (const auto& [labels, s] : family->series) {
        if (s.counter) writer.AddCounter(name, family->help, double(s.counter->value()), labels);
        if (s.gauge) writer.AddGauge(name, family->help, s.gauge->value(), labels);
        if (s.histogram) writer.AddHistogram(name, family->help, *s.histogram, labels);
      }
    }
    collectors = collectors_;
  }
  for (const auto& collect : collectors) collect(writer);
  return writer.Text();
}

}  // namespace shoal
