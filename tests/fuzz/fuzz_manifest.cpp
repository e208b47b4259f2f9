// Manifest bytes as the tracker and agents receive them: DecodeManifest
// (the validating canonical decoder), then what is done with a manifest
// that decodes: encoding it again and printing it as JSON.
//
// A manifest that decodes is canonical, so encoding it again must give the
// same bytes, and the JSON must name its version.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "shoal/manifest_codec.h"

using shoal::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  shoal::Result<shoal::Manifest> m = shoal::DecodeManifest(bytes);
  if (!m.ok()) {
    Check(!m.status().message().empty(), "a refusal without a message");
    return 0;
  }
  Check(shoal::ValidateManifest(*m).ok(), "a decoded manifest is not valid");
  shoal::Result<std::string> again = shoal::EncodeManifest(*m);
  Check(again.ok(), "a decoded manifest does not encode");
  Check(*again == bytes, "a decoded manifest encodes to other bytes");
  shoal::VersionId id = shoal::ComputeVersionId(bytes);
  std::string json = shoal::ManifestToJson(*m, id);
  Check(json.find(id.ToHex()) != std::string::npos, "the JSON does not name the version");
  return 0;
}
