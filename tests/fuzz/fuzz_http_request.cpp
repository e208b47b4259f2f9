// Bytes a client sends to one of Shoal's HTTP servers, read as the
// server's sessions read them (core/server/http_session_read.cpp): a Beast
// request_parser per request with HttpServerOptions' header and body
// limits, the request line, headers and (chunked or sized) body, then
// RequestFrom and ParseTarget, and the route table's Dispatch. Several
// requests on one connection are read one after another, as keep-alive
// does.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "fuzz/http_input.h"
#include "server/http_router.h"
#include "shoal/server/http_server.h"

namespace {

using shoal::fuzz::Check;

// Routes shaped like the daemons' own: exact, prefix, and a POST.
const shoal::HttpRouter& Router() {
  static const shoal::HttpRouter* router = [] {
    auto* r = new shoal::HttpRouter;
    auto echo = [](const shoal::HttpRequest& req) {
      return shoal::HttpResponse::Text(200, req.path + "?" + std::to_string(req.query.size()));
    };
    auto later = [](const shoal::HttpRequest& req, shoal::HttpResponder respond) {
      respond(shoal::HttpResponse::Text(200, req.body.substr(0, 16)));
    };
    r->Add("GET", "/healthz", echo);
    r->Add("GET", "/announce", echo);
    r->AddAsync("GET", "/v1/models/*", later);
    r->AddAsync("GET", "/*", later);
    r->Add("POST", "/v1/tokens", echo);
    return r;
  }();
  return *router;
}

// Reads and answers one request from the front of `wire`; false when the
// server would close the connection.
bool ServeOne(std::string_view* wire) {
  static const shoal::HttpServerOptions options;
  shoal::HttpRequest req;
  shoal::fuzz::ReadResult read = shoal::fuzz::ReadRequest(wire, &req);
  if (read == shoal::fuzz::ReadResult::kClosed) return false;
  if (read == shoal::fuzz::ReadResult::kBadTarget) return true;  // answered 400
  Check(req.body.size() <= options.max_body_bytes, "a body over the limit was read");
  Check(!req.path.empty() && req.path[0] == '/', "a parsed path that does not start with '/'");
  (void)req.BearerToken();
  int status = 0;
  Router().Dispatch(req, [&status](shoal::HttpResponse res) { status = res.status; });
  Check(status >= 200 && status <= 599, "a route answered without a status");
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view wire(reinterpret_cast<const char*>(data), size);
  while (!wire.empty() && ServeOne(&wire)) {
  }
  return 0;
}
