// SPDX-License-Identifier: BSD-3-Clause
// handlers: the route handlers, one group per resource, each given only the services it needs.
#pragma once

#include "gateway/api/artifacts_api.h"
#include "gateway/api/channels_api.h"
#include "gateway/api/cluster_routing.h"
#include "gateway/api/events_api.h"
#include "gateway/api/execute_api.h"
#include "gateway/api/journal_api.h"
#include "gateway/api/kernels_api.h"
#include "gateway/api/health_api.h"
#include "gateway/api/kernelspecs_api.h"
#include "gateway/api/mcp_api.h"
#include "gateway/api/metrics_api.h"
#include "gateway/api/pages_api.h"
#include "gateway/api/sessions_api.h"
#include "gateway/api/snapshots_api.h"
#include "gateway/api/status_api.h"
#include "gateway/api/tools_api.h"
#include "gateway/api/users_api.h"
#include "gateway/api/workspaces_api.h"

namespace cellgate::gateway {
class Gateway;
}

namespace cellgate::api {

struct Handlers {
  explicit Handlers(gateway::Gateway& gw);

  ClusterRouting cluster;  // before the groups that start kernels
  McpApi mcp;  // before status, which reports on it
  StatusApi status;
  KernelspecsApi kernelspecs;
  KernelsApi kernels;
  ChannelsApi channels;
  ExecuteApi execute;
  ToolsApi tools;
  SessionsApi sessions;
  WorkspacesApi workspaces;
  SnapshotsApi snapshots;
  EventsApi events;
  UsersApi users;
  PagesApi pages;
  HealthApi health;
  MetricsApi metrics;
  JournalApi journal;
  ArtifactsApi artifacts;
};

}  // namespace cellgate::api
