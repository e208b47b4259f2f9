// What the fuzz targets share: a check that aborts, so libFuzzer records
// the input when a property the product promises does not hold, and the
// token secret of the tracker the targets stand in for.
#ifndef SHOAL_TESTS_FUZZ_FUZZ_CHECK_H_
#define SHOAL_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>

namespace shoal::fuzz {

// The seeds' tokens are minted with this secret (tests/fuzz/seed_writer.cpp),
// so the targets' token authorities accept them.
constexpr char kTokenSecret[] = "shoal-fuzz-token-secret-32-bytes";

inline void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz check failed: %s\n", what);
  std::abort();
}

}  // namespace shoal::fuzz

#endif  // SHOAL_TESTS_FUZZ_FUZZ_CHECK_H_
