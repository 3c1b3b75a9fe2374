// SPDX-License-Identifier: BSD-3-Clause
// routes: the API's route table, one line per route, and the handler groups it names. A new route is
// one line here and a handler; the README's route tables list the same routes (route_table_test).
#include "gateway/api/handlers.h"

#include "common/config_error.h"
#include "gateway/api/router.h"
#include "gateway/config.h"
#include "gateway/gateway.h"
#include "gateway/kernel_manager.h"
#include "workspace/layout.h"

namespace cellgate::api {

namespace {

// The key signed artifact links are made with: the gateway's own, kept beside its database. Deleting
// the file (then restarting) revokes every link made so far.
gateway::LinkSigner link_signer(const std::string& data_dir) {
  auto signer = gateway::LinkSigner::load_or_create(data_dir + "/artifact-link.key");
  if (!signer) throw common::ConfigError("artifact link key: " + signer.error().message);
  return std::move(signer.value());
}

}  // namespace

Handlers::Handlers(gateway::Gateway& gw)
    : cluster(gw),
      mcp(gw.io(), gw.config().base_url),
      status(gw.kernels(), gw.started(), mcp),
      kernelspecs(gw.kernels(), gw.config().base_url, gw.config().default_kernel),
      kernels(gw.kernels(), cluster, gw.config().base_url),
      // A user's WebSockets together may queue 4 times what one may (--ws-queue), and be reading
      // messages of twice the largest one may send (--ws-read-per-user).
      channels(cluster, ChannelsOptions{{gw.config().max_ws_message_bytes, gw.config().ws_queue_bytes, gw.config().ws_ping_interval_s, nullptr},
                                        gw.config().max_connections_per_user, 4 * gw.config().ws_queue_bytes,
                                        gw.config().ws_read_per_user_bytes != 0 ? gw.config().ws_read_per_user_bytes
                                                                                : 2 * gw.config().max_ws_message_bytes,
                                        &gw.metrics(), &gw.events()}),
      execute(gw.config().execute_output_bytes),
      tools(gw.offload(), gw.audit(),
            ToolsOptions{gw.config().execute_output_bytes, gw.config().spawner == "jail", gw.config().jail_helper}),
      sessions(gw.db(), gw.kernels(), cluster, gw.config().base_url, gw.config().max_sessions_per_user),
      workspaces(gw.workspaces(), gw.db(), gw.offload(), gw.audit(), gw.kernels(), gw.config().base_url),
      snapshots(gw.workspaces(), gw.db(), gw.offload(), gw.audit(), gw.config().base_url,
                workspace::data_tmp_dir(gw.config().data_dir), gw.events(), gw.metrics()),
      events(gw.events(), gw.io()),
      users(gw),
      health(gw),
      metrics(gw, mcp),
      journal(gw.journal(), gw.db(), gw.kernels(), gw.workspaces(), gw.offload()),
      artifacts(gw.workspaces(), gw.db(), gw.offload(), gw.audit(), link_signer(gw.config().data_dir),
                ArtifactsOptions{gw.config().base_url, gw.config().max_artifacts_per_user, !gw.config().certfile.empty()}) {}

std::vector<Route> make_routes(Handlers& h) {
  using V = http::verb;
  constexpr Role kUser = Role::kUser, kOwner = Role::kOwner, kPublic = Role::kPublic;
  // Patterns are below --base-url. GET routes answer HEAD too; OPTIONS is CORS preflight, everywhere.
  return {
      {V::get, "/", kPublic, on(h.pages, &PagesApi::page)},
      {V::get, "/admin", kPublic, on(h.pages, &PagesApi::page)},
      {V::get, "/static/{file}", kPublic, on(h.pages, &PagesApi::file)},
      {V::get, "/healthz", kPublic, on(h.health, &HealthApi::healthz)},
      {V::get, "/readyz", kPublic, on(h.health, &HealthApi::readyz)},
      {V::get, "/metrics", Role::kMetrics, on(h.metrics, &MetricsApi::metrics)},
      {V::get, "/api", kUser, on(h.status, &StatusApi::version)},
      {V::get, "/api/status", kUser, on(h.status, &StatusApi::status)},
      {V::get, "/api/me", kUser, on(h.status, &StatusApi::me)},
      {V::get, "/api/users", Role::kAdmin, on(h.users, &UsersApi::list)},
      {V::get, "/api/kernelspecs", kUser, on(h.kernelspecs, &KernelspecsApi::list)},
      {V::get, "/api/kernelspecs/{name}", kUser, on(h.kernelspecs, &KernelspecsApi::get)},
      {V::get, "/kernelspecs/{name}/{file}", kUser, on(h.kernelspecs, &KernelspecsApi::resource)},
      {V::get, "/api/events", kUser, on(h.events, &EventsApi::stream)},
      {V::get, "/api/kernels", kUser, on(h.kernels, &KernelsApi::list)},
      {V::post, "/api/kernels", kUser, on(h.kernels, &KernelsApi::start)},
      {V::get, "/api/kernels/{kernel}", kOwner, on(h.kernels, &KernelsApi::get)},
      {V::delete_, "/api/kernels/{kernel}", kOwner, on(h.kernels, &KernelsApi::remove)},
      {V::post, "/api/kernels/{kernel}/interrupt", kOwner, on(h.kernels, &KernelsApi::interrupt)},
      {V::post, "/api/kernels/{kernel}/restart", kOwner, on(h.kernels, &KernelsApi::restart)},
      {V::get, "/api/kernels/{kernel}/egress", kOwner, on(h.kernels, &KernelsApi::egress)},
      {V::patch, "/api/kernels/{kernel}", kOwner, on(h.kernels, &KernelsApi::patch)},
      {V::post, "/api/kernels/{kernel}/pause", kOwner, on(h.kernels, &KernelsApi::pause)},
      {V::post, "/api/kernels/{kernel}/resume", kOwner, on(h.kernels, &KernelsApi::resume)},
      {V::get, "/api/kernels/{kernel}/channels", kOwner, on(h.channels, &ChannelsApi::connect)},
      {V::post, "/api/kernels/{kernel}/execute", kOwner, on(h.execute, &ExecuteApi::execute)},
      {V::post, "/api/kernels/{kernel}/tools/read", kOwner, on(h.tools, &ToolsApi::read)},
      {V::post, "/api/kernels/{kernel}/tools/write", kOwner, on(h.tools, &ToolsApi::write)},
      {V::post, "/api/kernels/{kernel}/tools/edit", kOwner, on(h.tools, &ToolsApi::edit)},
      {V::post, "/api/kernels/{kernel}/tools/exec", kOwner, on(h.tools, &ToolsApi::exec)},
      {V::post, "/api/kernels/{kernel}/tools/process", kOwner, on(h.tools, &ToolsApi::process)},
      {V::get, "/api/sessions", kUser, on(h.sessions, &SessionsApi::list)},
      {V::post, "/api/sessions", kUser, on(h.sessions, &SessionsApi::create)},
      {V::get, "/api/sessions/{session}", kOwner, on(h.sessions, &SessionsApi::get)},
      {V::patch, "/api/sessions/{session}", kOwner, on(h.sessions, &SessionsApi::update)},
      {V::delete_, "/api/sessions/{session}", kOwner, on(h.sessions, &SessionsApi::remove)},
      {V::get, "/api/workspaces", kUser, on(h.workspaces, &WorkspacesApi::list)},
      {V::post, "/api/workspaces", kUser, on(h.workspaces, &WorkspacesApi::create)},
      {V::get, "/api/workspaces/{workspace}", kOwner, on(h.workspaces, &WorkspacesApi::get)},
      {V::delete_, "/api/workspaces/{workspace}", kOwner, on(h.workspaces, &WorkspacesApi::remove)},
      {V::get, "/api/workspaces/{workspace}/files/{path*}", kOwner, on(h.workspaces, &WorkspacesApi::read_file)},
      {V::put, "/api/workspaces/{workspace}/files/{path*}", kOwner, on(h.workspaces, &WorkspacesApi::write_file)},
      {V::delete_, "/api/workspaces/{workspace}/files/{path*}", kOwner, on(h.workspaces, &WorkspacesApi::delete_file)},
      {V::get, "/api/workspaces/{workspace}/snapshots", kOwner, on(h.snapshots, &SnapshotsApi::list)},
      {V::post, "/api/workspaces/{workspace}/snapshots", kOwner, on(h.snapshots, &SnapshotsApi::take)},
      {V::get, "/api/workspaces/{workspace}/snapshots/{snapshot}", kOwner, on(h.snapshots, &SnapshotsApi::get)},
      {V::delete_, "/api/workspaces/{workspace}/snapshots/{snapshot}", kOwner, on(h.snapshots, &SnapshotsApi::remove)},
      {V::post, "/api/workspaces/{workspace}/snapshots/{snapshot}/restore", kOwner, on(h.snapshots, &SnapshotsApi::restore)},
      {V::get, "/api/workspaces/{workspace}/snapshots/{snapshot}/archive", kOwner, on(h.snapshots, &SnapshotsApi::archive)},
      {V::get, "/api/workspaces/{workspace}/diff", kOwner, on(h.snapshots, &SnapshotsApi::diff)},
      {V::get, "/api/journals", kUser, on(h.journal, &JournalApi::list)},
      {V::get, "/api/kernels/{journal}/journal", kOwner, on(h.journal, &JournalApi::get)},
      {V::get, "/api/kernels/{journal}/journal.ipynb", kOwner, on(h.journal, &JournalApi::notebook)},
      {V::delete_, "/api/kernels/{journal}/journal", kOwner, on(h.journal, &JournalApi::remove)},
      {V::post, "/api/kernels/{journal}/journal/reproduce", kOwner, on(h.journal, &JournalApi::reproduce)},
      {V::post, "/api/workspaces/{workspace}/artifacts", kOwner, on(h.artifacts, &ArtifactsApi::publish)},
      {V::get, "/api/artifacts", kUser, on(h.artifacts, &ArtifactsApi::list)},
      {V::get, "/api/artifacts/{artifact}", kOwner, on(h.artifacts, &ArtifactsApi::download)},
      {V::delete_, "/api/artifacts/{artifact}", kOwner, on(h.artifacts, &ArtifactsApi::remove)},
      {V::post, "/api/artifacts/{artifact}/link", kOwner, on(h.artifacts, &ArtifactsApi::link)},
      {V::get, "/api/shared/artifacts/{shared}", kPublic, on(h.artifacts, &ArtifactsApi::shared)},
      {V::post, "/mcp", kUser, on(h.mcp, &McpApi::call)},
      {V::get, "/mcp", kUser, on(h.mcp, &McpApi::call)},
      {V::delete_, "/mcp", kUser, on(h.mcp, &McpApi::call)},
  };
}

}  // namespace cellgate::api
