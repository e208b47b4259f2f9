#include "serve/tracker_wiring.h"

#include "registry/issued_tokens.h"

namespace shoal::tracker {

AnnounceDeps AnnounceDepsOf(TrackerContext& ctx) {
  return AnnounceDeps{ctx.tokens,
                      ctx.torrents,
                      ctx.swarm,
                      ctx.metrics,
                      ctx.options.announce_interval_ms,
                      ctx.options.seed_announce_interval_ms};
}

GatewayDeps GatewayDepsOf(TrackerContext& ctx) {
  WarmDeps warm{ctx.scheduler_loop, ctx.fetches, ctx.agents, ctx.controls, ctx.metrics};
  RegistryDeps registry{ctx.options, ctx.tokens,   ctx.store,  ctx.leases, ctx.metrics, ctx.pool,
                        ctx.signer,  ctx.torrents, ctx.origin, warm,       ctx.changes};
  return GatewayDeps{ctx.tokens,          ctx.signer,        ctx.peer_certs, ctx.metrics,
                     ctx.agents,          ctx.controls,      ctx.http_port,  registry,
                     AnnounceDepsOf(ctx), ctx.ring_snapshots};
}

HttpApiDeps HttpApiDepsOf(TrackerContext& ctx) {
  return HttpApiDeps{ctx.tokens,         IssuedTokensPath(ctx.options.data_dir),
                     ctx.signer,         ctx.store,
                     ctx.agents,         ctx.metrics,
                     AnnounceDepsOf(ctx)};
}

CollectorSources CollectorSourcesOf(TrackerContext& ctx) {
  return CollectorSources{ctx.metrics,  ctx.options, ctx.agents, ctx.swarm,
                          ctx.torrents, ctx.leases,  ctx.origin};
}

}  // namespace shoal::tracker
