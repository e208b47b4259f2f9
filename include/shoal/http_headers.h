// HttpHeaders: the header fields of one HTTP request or response, in the
// order they were sent, as both Shoal's HTTP server and its S3 client see
// them.
//
// Thread-safety: a plain value; safe to read from many threads, to change
// from one.
#ifndef SHOAL_HTTP_HEADERS_H_
#define SHOAL_HTTP_HEADERS_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shoal {

// Header fields in arrival order; names compare case-insensitively.
class HttpHeaders {
 public:
  // The first value of `name`, or nullopt.
  std::optional<std::string> Get(std::string_view name) const;
  bool Has(std::string_view name) const { return Get(name).has_value(); }
  // Replaces every field called `name` with one field.
  void Set(std::string_view name, std::string_view value);
  // Removes every field called `name`.
  void Remove(std::string_view name);
  // Appends a field, keeping any others of that name.
  void Add(std::string_view name, std::string_view value);

  using Field = std::pair<std::string, std::string>;
  std::vector<Field>::const_iterator begin() const { return fields_.begin(); }
  std::vector<Field>::const_iterator end() const { return fields_.end(); }
  size_t size() const { return fields_.size(); }

 private:
  std::vector<Field> fields_;
};

// `value` without the spaces and tabs HTTP allows around a header value and
// its parts ("optional whitespace").
std::string_view TrimOws(std::string_view value);

// `name` with ASCII letters in lower case: how SigV4 signs header names, and
// how the S3 client stores the names of response headers.
std::string LowercaseHeaderName(std::string_view name);

}  // namespace shoal

#endif  // SHOAL_HTTP_HEADERS_H_
