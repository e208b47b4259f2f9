#include "server/http_router.h"

#include <stdexcept>

#include "shoal/log.h"

namespace shoal {

void HttpRouter::Add(std::string method, std::string pattern, HttpHandler handler) {
  AddAsync(std::move(method), std::move(pattern),
           [handler = std::move(handler)](const HttpRequest& request, HttpResponder respond) {
             respond(handler(request));
           });
}

void HttpRouter::AddAsync(std::string method, std::string pattern, HttpAsyncHandler handler) {
  bool prefix = !pattern.empty() && pattern.back() == '*';
  if (prefix) pattern.pop_back();
  if (pattern.empty() || pattern[0] != '/') {
    throw std::invalid_argument("route pattern '" + pattern + "' must start with '/'");
  }
  for (const Route& r : routes_) {
    if (r.method == method && r.pattern == pattern && r.prefix == prefix) {
      throw std::invalid_argument("duplicate route " + method + " " + pattern);
    }
  }
  routes_.push_back(Route{std::move(method), std::move(pattern), prefix, std::move(handler)});
}

const HttpRouter::Route* HttpRouter::Match(const HttpRequest& request,
                                           HttpResponse* refusal) const {
  // The most specific pattern that matches the path: exact first, then the
  // longest prefix.
  const Route* best = nullptr;
  for (const Route& r : routes_) {
    bool match = r.prefix ? request.path.compare(0, r.pattern.size(), r.pattern) == 0
                          : request.path == r.pattern;
    if (!match) continue;
    if (best == nullptr || (!r.prefix && best->prefix) ||
        (r.prefix == best->prefix && r.pattern.size() > best->pattern.size())) {
      best = &r;
    }
  }
  if (best == nullptr) {
    *refusal = HttpResponse::Error(404, "no route for " + request.method + " " + request.path);
    return nullptr;
  }
  const Route* chosen = nullptr;
  const Route* get = nullptr;
  std::string allow;
  for (const Route& r : routes_) {
    if (r.pattern != best->pattern || r.prefix != best->prefix) continue;
    if (r.method == request.method) chosen = &r;
    if (r.method == "GET") get = &r;
    allow += (allow.empty() ? "" : ", ") + r.method;
  }
  if (chosen == nullptr && request.method == "HEAD") chosen = get;
  if (chosen == nullptr) {
    if (get != nullptr) allow += ", HEAD";
    *refusal =
        HttpResponse::Error(405, "method " + request.method + " is not allowed on " + request.path);
    refusal->headers.Set("Allow", allow);
  }
  return chosen;
}

void HttpRouter::Dispatch(const HttpRequest& request, HttpResponder respond) const {
  HttpResponse refusal;
  const Route* route = Match(request, &refusal);
  if (route == nullptr) return respond(std::move(refusal));
  // A handler that throws has not answered (a responder is called once, and
  // an answer is its last act).
  try {
    return route->handler(request, respond);
  } catch (const std::exception& e) {
    Log(LogLevel::kError, "http.handler_exception",
        {{"method", request.method}, {"path", request.path}, {"what", e.what()}});
  } catch (...) {
    Log(LogLevel::kError, "http.handler_exception",
        {{"method", request.method}, {"path", request.path}});
  }
  respond(HttpResponse::Error(500, "internal error; the server log has the details"));
}

}  // namespace shoal
