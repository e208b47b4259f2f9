// FakeTracker's plain state: the ring, revocations and versions it serves,
// and what it recorded. Its RPC and loop: fake_tracker.cpp.
#include <stdlib.h>
#include <unistd.h>

#include <stdexcept>

#include "daemon/fake_tracker.h"
#include "shoal/manifest_codec.h"

namespace shoal {
namespace testing {

std::unique_ptr<ManifestSigner> NewTestSigner() {
  char tmpl[] = "/tmp/shoal-fake-key-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  const std::string dir = tmpl, path = dir + "/key.pem";
  auto signer = ManifestSigner::LoadOrCreate(path);
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
  if (!signer.ok()) throw std::runtime_error("test signer: " + signer.status().ToString());
  return std::move(signer).value();
}

void FakeTracker::JoinRing(const std::string& id, uint64_t weight) {
  std::lock_guard<std::mutex> lock(mu_);
  changes_.push_back({2 + changes_.size(), RingChange{id, weight, false}});
}

void FakeTracker::LeaveRing(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  changes_.push_back({2 + changes_.size(), RingChange{id, 0, true}});
}

uint64_t FakeTracker::epoch() const {
  std::lock_guard<std::mutex> lock(mu_);
  return 1 + changes_.size();
}

void FakeTracker::SetHeartbeatDeltas(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  heartbeat_deltas_ = on;
}

void FakeTracker::Revoke(const Revocation& r) { revocations_.Add({r}); }

VersionId FakeTracker::Publish(const Manifest& m, const std::string& tag) {
  Result<std::string> bytes = EncodeManifest(m);
  if (!bytes.ok()) throw std::runtime_error("fake publish: " + bytes.status().ToString());
  Published v{ComputeVersionId(*bytes), *bytes, ""};
  v.signature = signer_->Sign(v.id);
  const std::string model = m.ns + "/" + m.name + ":";
  std::lock_guard<std::mutex> lock(mu_);
  versions_[model + tag] = v;
  versions_[model + v.id.ToHex()] = v;
  return v.id;
}

void FakeTracker::SetTamper(ManifestTamper tamper) {
  std::lock_guard<std::mutex> lock(mu_);
  tamper_ = tamper;
}

void FakeTracker::SetNeedAnswer(NeedAnswer answer, std::string error) {
  std::lock_guard<std::mutex> lock(mu_);
  need_answer_ = answer;
  need_error_ = std::move(error);
}

std::vector<FakeRegistration> FakeTracker::registrations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return registrations_;
}

std::vector<FakeHeartbeat> FakeTracker::heartbeats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return heartbeats_;
}

std::vector<uint64_t> FakeTracker::ring_calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ring_calls_;
}

std::vector<std::string> FakeTracker::authentications() const {
  std::lock_guard<std::mutex> lock(mu_);
  return authentications_;
}

std::vector<std::string> FakeTracker::resolves() const {
  std::lock_guard<std::mutex> lock(mu_);
  return resolves_;
}

std::vector<FakeNeed> FakeTracker::needs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return needs_;
}

}  // namespace testing
}  // namespace shoal
