// ForwardingOrigin: an Origin that passes every call to a real one, for
// tests that watch or hold one kind of call (override it, call the base).
#ifndef SHOAL_TESTS_CORE_FORWARDING_ORIGIN_H_
#define SHOAL_TESTS_CORE_FORWARDING_ORIGIN_H_

#include <memory>
#include <string>
#include <utility>

#include "shoal/origin.h"

namespace shoal::testing {

class ForwardingOrigin : public Origin {
 public:
  explicit ForwardingOrigin(std::unique_ptr<Origin> inner) : inner_(std::move(inner)) {}
  Status Get(const std::string& key, uint64_t offset, uint64_t length, ByteSink& sink) override {
    return inner_->Get(key, offset, length, sink);
  }
  Status Put(const std::string& key, const uint8_t* data, size_t len) override {
    return inner_->Put(key, data, len);
  }
  Status PutStream(const std::string& key, ByteSource& source) override {
    return inner_->PutStream(key, source);
  }
  Result<ObjectInfo> Head(const std::string& key) override { return inner_->Head(key); }
  Result<ListPage> List(const std::string& prefix, const std::string& token,
                        uint32_t max_keys) override {
    return inner_->List(prefix, token, max_keys);
  }
  Status Delete(const std::string& key) override { return inner_->Delete(key); }
  OriginCounters counters() const override { return inner_->counters(); }
  std::string Describe() const override { return inner_->Describe(); }

 private:
  std::unique_ptr<Origin> inner_;
};

}  // namespace shoal::testing

#endif  // SHOAL_TESTS_CORE_FORWARDING_ORIGIN_H_
