// Reads an HTTP request from fuzz bytes the way Shoal's HTTP server reads
// one from a connection (core/server/http_session_read.cpp): a Beast
// request_parser with HttpServerOptions' limits, then RequestFrom and
// ParseTarget. Shared by the targets whose input is a whole request.
#ifndef SHOAL_TESTS_FUZZ_HTTP_INPUT_H_
#define SHOAL_TESTS_FUZZ_HTTP_INPUT_H_

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdint>
#include <string_view>

#include "server/http_wire.h"
#include "shoal/server/http_server.h"

namespace shoal::fuzz {

enum class ReadResult {
  kClosed,     // the server would close the connection: an error, or the bytes end mid-request
  kBadTarget,  // a whole request whose target ParseTarget refuses (400)
  kRequest,    // *req holds the request, its path and query parsed
};

// Reads one request from the front of *wire and removes its bytes.
inline ReadResult ReadRequest(std::string_view* wire, HttpRequest* req) {
  namespace http = boost::beast::http;
  static const HttpServerOptions options;
  http::request_parser<http::string_body> parser;
  parser.header_limit(uint32_t(options.max_header_bytes));
  parser.body_limit(options.max_body_bytes);
  boost::beast::error_code ec;
  while (!parser.is_done()) {
    if (wire->empty()) return ReadResult::kClosed;  // the server waits, then times out
    size_t used = parser.put(boost::asio::buffer(wire->data(), wire->size()), ec);
    wire->remove_prefix(used);
    if (ec == http::error::need_more && used > 0) {
      ec = {};
      continue;
    }
    if (ec) return ReadResult::kClosed;
  }
  http::request<http::string_body> msg = parser.release();
  *req = RequestFrom(msg, "127.0.0.1:40000");
  return ParseTarget(req->target, req) ? ReadResult::kRequest : ReadResult::kBadTarget;
}

}  // namespace shoal::fuzz

#endif  // SHOAL_TESTS_FUZZ_HTTP_INPUT_H_
