#include "serve/tracker_wiring.h"

#include "registry/issued_tokens.h"

namespace shoal::tracker {

AnnounceDeps AnnounceDepsOf(TrackerContext& ctx) {
  return AnnounceDeps{.tokens = ctx.tokens,
                      .torrents = ctx.torrents,
                      .swarm = ctx.swarm,
                      .metrics = ctx.metrics,
                      .announce_interval_ms = ctx.options.announce_interval_ms,
                      .seed_announce_interval_ms = ctx.options.seed_announce_interval_ms};
}

GatewayDeps GatewayDepsOf(TrackerContext& ctx) {
  WarmDeps warm{.scheduler_loop = ctx.scheduler_loop,
                .fetches = ctx.fetches,
                .agents = ctx.agents,
                .orders = ctx.controls,
                .metrics = ctx.metrics};
  RegistryDeps registry{.options = ctx.options,
                        .tokens = ctx.tokens,
                        .store = ctx.store,
                        .leases = ctx.leases,
                        .metrics = ctx.metrics,
                        .pool = ctx.pool,
                        .signer = ctx.signer,
                        .torrents = ctx.torrents,
                        .origin = ctx.origin,
                        .warm = warm,
                        .changes = ctx.changes};
  return GatewayDeps{.tokens = ctx.tokens,
                     .signer = ctx.signer,
                     .peer_certs = ctx.peer_certs,
                     .metrics = ctx.metrics,
                     .agents = ctx.agents,
                     .controls = ctx.controls,
                     .http_port = ctx.http_port,
                     .registry = registry,
                     .announce = AnnounceDepsOf(ctx),
                     .ring = ctx.ring_snapshots};
}

HttpApiDeps HttpApiDepsOf(TrackerContext& ctx) {
  return HttpApiDeps{.tokens = ctx.tokens,
                     .issued_tokens = IssuedTokensPath(ctx.options.data_dir),
                     .signer = ctx.signer,
                     .store = ctx.store,
                     .agents = ctx.agents,
                     .metrics = ctx.metrics,
                     .announce = AnnounceDepsOf(ctx)};
}

CollectorSources CollectorSourcesOf(TrackerContext& ctx) {
  return CollectorSources{.metrics = ctx.metrics,
                          .options = ctx.options,
                          .agents = ctx.agents,
                          .swarm = ctx.swarm,
                          .torrents = ctx.torrents,
                          .leases = ctx.leases,
                          .origin = ctx.origin};
}

}  // namespace shoal::tracker
