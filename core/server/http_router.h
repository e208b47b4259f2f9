// HttpRouter: the route table behind HttpServer, and the one place where a
// request becomes a response (404, 405 and 500 included). Private to
// shoal_server; knows nothing of sockets.
#ifndef SHOAL_SERVER_HTTP_ROUTER_H_
#define SHOAL_SERVER_HTTP_ROUTER_H_

#include <string>
#include <vector>

#include "shoal/server/http_server.h"

namespace shoal {

// Thread-safety: Add before any Dispatch; Dispatch is then safe from many
// threads at once.
class HttpRouter {
 public:
  // Throws std::invalid_argument for a duplicate method and pattern.
  void Add(std::string method, std::string pattern, HttpHandler handler);
  void AddAsync(std::string method, std::string pattern, HttpAsyncHandler handler);

  // Runs the matching handler, which answers through `respond` now or
  // later. A HEAD request without a HEAD route uses the GET route; the
  // caller drops the body.
  void Dispatch(const HttpRequest& request, HttpResponder respond) const;

 private:
  struct Route {
    std::string method;
    std::string pattern;  // without the trailing '*'
    bool prefix;
    HttpAsyncHandler handler;
  };
  // The route `request` goes to, or the 404 or 405 answer.
  const Route* Match(const HttpRequest& request, HttpResponse* refusal) const;
  std::vector<Route> routes_;
};

}  // namespace shoal

#endif  // SHOAL_SERVER_HTTP_ROUTER_H_
