// The hub face of ReadService: the Hugging Face hub's model, tree and
// resolve calls over Shoal versions (read/hub_api.h says what maps to what).
#include <algorithm>

#include "read/decimal_param.h"
#include "read/read_service.h"
#include "shoal/manifest.h"
#include "shoal/uri_encode.h"

namespace shoal {
namespace {

// The most tree entries one page holds, and the default.
constexpr uint64_t kTreePageEntries = 1000;

bool QueryTrue(const std::map<std::string, std::string>& query, const std::string& key) {
  auto it = query.find(key);
  return it != query.end() && HubFlagTrue(it->second);
}

std::string Repo(const HubRequest& hub) { return hub.org + "/" + hub.name; }

}  // namespace

void ReadService::AddHubRoutes(HttpServer& server) {
  for (const char* method : {"GET", "HEAD", "POST"}) {
    server.HandleAsync(method, "/*", [this](const HttpRequest& r, HttpResponder respond) {
      ServeHub(r, std::move(respond));
    });
  }
}

void ReadService::ServeHub(const HttpRequest& request, HttpResponder respond) {
  std::shared_ptr<ReadCall> call = Begin(ReadApi::kHub, request, std::move(respond));
  if (stopped_) return Fail(call, {ReadFailure::kUnavailable, "the agent is stopping"});
  const std::string raw = request.target.substr(0, request.target.find('?'));
  Result<HubRequest> parsed = ParseHubTarget(raw);
  if (!parsed.ok()) return Fail(call, {ReadFailure::kBadRequest, parsed.status().message()});
  HubRequest hub = std::move(parsed).value();
  // paths-info is the one call clients POST; any other POST is unknown.
  if ((hub.kind == HubRequest::Kind::kPathsInfo) != (request.method == "POST")) {
    hub.kind = HubRequest::Kind::kUnknown;
  }
  if (hub.kind == HubRequest::Kind::kPathsInfo) {
    Result<HubPathsQuery> asked =
        ParseHubPathsBody(request.headers.Get("Content-Type").value_or(""), request.body);
    if (!asked.ok()) return Fail(call, {ReadFailure::kBadRequest, asked.status().message()});
    hub.paths = std::move(asked).value();
  }
  if (hub.kind == HubRequest::Kind::kUnknown) {
    // The hub's other APIs (commits, discussions, spaces, ...): a clean
    // 404, which the clients take as "nothing there" and go on.
    return Fail(call, {ReadFailure::kNoSuchKey,
                       "this Shoal agent serves only the hub's model, tree, paths-info and "
                       "resolve calls"});
  }
  std::optional<std::string> bearer = request.BearerToken();
  // Clients that check for the hub's token prefix get a Shoal token with it.
  if (bearer && bearer->rfind("hf_shoal1.", 0) == 0) bearer->erase(0, 3);
  call->token = bearer ? *bearer : AnonymousToken(request);
  if (call->token.empty()) {
    return Fail(call, {ReadFailure::kNoCredentials,
                       "Access to model " + Repo(hub) +
                           " is restricted; send 'Authorization: Bearer <token>' (HF_TOKEN) "
                           "with a Shoal read token for it"});
  }
  if (!NotRevoked(call)) return;
  if (!TakeSlot(call)) return;
  const std::string ns = NamespaceOfOrg(options_.hub_orgs, hub.org);
  if (!ValidateName("namespace", ns).ok() || !ValidateName("model name", hub.name).ok()) {
    return Fail(call, {ReadFailure::kNoSuchKey,
                       "Repository Not Found: " + Repo(hub) + " is not a Shoal model name",
                       {{"X-Error-Code", "RepoNotFound"}}});
  }
  Result<std::string> ref = RefOfRevision(hub.revision);
  if (!ref.ok()) {
    return Fail(call, {ReadFailure::kNoSuchKey,
                       "Invalid rev id: " + ref.status().message(),
                       {{"X-Error-Code", "RevisionNotFound"}}});
  }
  // Only the Host header outlives the request: the tree's next-page link.
  auto answer = [this, call, host = request.headers.Get("Host").value_or("127.0.0.1"),
                 hub](const Resolution& r) {
    if (!r.model) return Fail(call, r.error);
    AnswerHub(call, host, hub, r.model);
  };
  if (auto hit = resolver_.Cached(call->token, ns, hub.name, *ref)) {
    return answer(Resolution{hit, {}});
  }
  bool queued = workers_.Post([this, call, ns, hub, ref = *ref, answer] {
    answer(ResolveHubRevision(call->token, ns, hub.name, hub.revision, ref));
  });
  if (!queued) Fail(call, {ReadFailure::kUnavailable, "the agent is stopping"});
}

Resolution ReadService::ResolveHubRevision(const std::string& token, const std::string& ns,
                                           const std::string& name, const std::string& revision,
                                           const std::string& ref) {
  Resolution r = resolver_.Resolve(token, ns, name, ref);
  if (r.model || r.error.failure != ReadFailure::kNoSuchKey) return r;
  if (IsCommitSha(revision)) {
    Resolution c = resolver_.ResolveCommit(token, ns, name, revision);
    if (c.model || c.error.failure != ReadFailure::kNoSuchKey) return c;
  }
  // Which is missing: the model, or the revision?
  TagsResolution tags = resolver_.ListTags(token, ns);
  const bool model_known =
      tags.listing && std::any_of(tags.listing->tags.begin(), tags.listing->tags.end(),
                                  [&](const auto& tag) { return tag.first == name; });
  if (model_known) {
    r.error = {ReadFailure::kNoSuchKey,
               "Invalid rev id: " + revision + " is no tag, version or imported commit of " + ns +
                   "/" + name,
               {{"X-Error-Code", "RevisionNotFound"}}};
  } else {
    r.error = {ReadFailure::kNoSuchKey,
               "Repository Not Found: no model " + ns + "/" + name,
               {{"X-Error-Code", "RepoNotFound"}}};
  }
  return r;
}

void ReadService::AnswerHub(const std::shared_ptr<ReadCall>& call, const std::string& host,
                            const HubRequest& hub,
                            const std::shared_ptr<const ResolvedModel>& model) {
  const ResolvedModel& m = *model;
  const std::string commit = HubCommit(m.manifest, m.version);
  switch (hub.kind) {
    case HubRequest::Kind::kModel: {
      HttpResponse res = HttpResponse::Json(
          200, HubModelJson(Repo(hub), m.manifest, m.version, QueryTrue(call->query, "blobs")));
      res.headers.Set("X-Repo-Commit", commit);
      return call->Finish(std::move(res));
    }
    case HubRequest::Kind::kTree: {
      uint64_t limit = kTreePageEntries;
      auto it = call->query.find("limit");
      if (it != call->query.end()) {
        Result<uint64_t> asked = ParseDecimalParam("limit", it->second, 1, kTreePageEntries);
        if (!asked.ok()) return Fail(call, {ReadFailure::kBadRequest, asked.status().message()});
        limit = *asked;
      }
      const bool recursive = QueryTrue(call->query, "recursive");
      auto cursor = call->query.find("cursor");
      Result<HubTreePage> page =
          HubTree(m.manifest, hub.path, recursive,
                  cursor == call->query.end() ? std::string() : cursor->second, limit);
      if (!page.ok()) {
        if (page.status().code() == Status::Code::kNotFound) {
          return Fail(call, {ReadFailure::kNoSuchKey,
                             "Entry Not Found: " + Repo(hub) + " has no folder '" + hub.path +
                                 "' at " + hub.revision,
                             {{"X-Error-Code", "EntryNotFound"}}});
        }
        return Fail(call, {ReadFailure::kBadRequest, page.status().message()});
      }
      HttpResponse res = HttpResponse::Json(200, std::move(page->json));
      res.headers.Set("X-Repo-Commit", commit);
      if (!page->cursor.empty()) {
        // The next page at the commit, so a tag that moves between pages
        // does not mix two versions.
        std::string next = "http://" + host + "/api/models/" + UriEncodeQuery(hub.org) + "/" +
                           UriEncodeQuery(hub.name) + "/tree/" + commit;
        if (!hub.path.empty()) next += "/" + UriEncodePath(hub.path);
        next += "?cursor=" + UriEncodeQuery(page->cursor) + "&limit=" + std::to_string(limit);
        if (recursive) next += "&recursive=true";
        res.headers.Set("Link", "<" + next + ">; rel=\"next\"");
      }
      return call->Finish(std::move(res));
    }
    case HubRequest::Kind::kPathsInfo: {
      HttpResponse res = HttpResponse::Json(200, HubPathsInfo(m.manifest, hub.paths, commit));
      res.headers.Set("X-Repo-Commit", commit);
      return call->Finish(std::move(res));
    }
    case HubRequest::Kind::kResolve: {
      const FileEntry* f = m.Find(hub.path);
      if (f == nullptr) {
        return Fail(call, {ReadFailure::kNoSuchKey,
                           "Entry Not Found: " + Repo(hub) + " has no file '" + hub.path + "' at " +
                               hub.revision,
                           {{"X-Error-Code", "EntryNotFound"}, {"X-Repo-Commit", commit}}});
      }
      HubFileId id = HubFileIdOf(*f);
      call->etag = id.ETag();
      call->reply_headers.emplace_back("X-Repo-Commit", commit);
      call->reply_headers.emplace_back("X-Linked-Etag", call->etag);
      call->reply_headers.emplace_back("X-Linked-Size", std::to_string(f->size));
      return AnswerFile(call, model, *f);
    }
    case HubRequest::Kind::kUnknown:
      break;
  }
  Fail(call, {ReadFailure::kInternal, "unexpected hub request"});
}

}  // namespace shoal
