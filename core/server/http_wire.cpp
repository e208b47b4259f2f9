#include "server/http_wire.h"

#include <optional>
#include <utility>

#include "shoal/uri_encode.h"

namespace shoal {

bool IsHeaderSafe(std::string_view name, std::string_view value) {
  if (name.empty()) return false;
  for (char c : name) {
    bool token = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!token) return false;
  }
  return value.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

bool ParseTarget(std::string_view target, HttpRequest* req) {
  if (target.empty() || target[0] != '/') return false;
  size_t q = target.find('?');
  std::optional<std::string> path = PercentDecode(target.substr(0, q), false);
  if (!path) return false;
  req->path = std::move(*path);
  if (q == std::string_view::npos) return true;
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    std::optional<std::string> key = PercentDecode(pair.substr(0, eq), true);
    std::optional<std::string> value = PercentDecode(
        eq == std::string_view::npos ? "" : pair.substr(eq + 1), true, /*allow_nul=*/true);
    if (!key || !value) return false;
    req->query[std::move(*key)] = std::move(*value);
  }
  return true;
}

HttpRequest RequestFrom(boost::beast::http::request<boost::beast::http::string_body>& msg,
                        const std::string& remote) {
  HttpRequest req;
  req.method = std::string(msg.method_string().data(), msg.method_string().size());
  req.target = std::string(msg.target().data(), msg.target().size());
  req.remote_address = remote;
  for (const auto& field : msg) {
    req.headers.Add(std::string_view(field.name_string().data(), field.name_string().size()),
                    std::string_view(field.value().data(), field.value().size()));
  }
  req.body = std::move(msg.body());
  return req;
}

}  // namespace shoal
