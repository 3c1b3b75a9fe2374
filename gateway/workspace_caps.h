// SPDX-License-Identifier: BSD-3-Clause
// workspace_caps: the limits a workspace is held to are its owner's, whoever acts on it. An admin who
// creates, writes into, restores or publishes from another user's workspace (?owner=) spends that
// user's quotas, not the admin's own (which may be none).
#pragma once

#include <string>

#include "common/result.h"
#include "state/users.h"
#include "workspace/workspace.h"

namespace cellgate::gateway {

// The workspace limits with the user's own caps (set-limits) applied over the gateway's.
workspace::WorkspaceConfig workspace_config_for(const workspace::WorkspaceConfig& base, const state::User& user);

// The limits of owner's workspaces, for a request by caller: the caller's own when they are the owner,
// else the owner's row's; an owner without a row (the warm pool's, notebook-http's) has the gateway's.
// Io thread (it may read the users table).
common::Result<workspace::WorkspaceConfig> owner_workspace_config(const workspace::WorkspaceConfig& base,
                                                                  state::UserStore& users, const state::User& caller,
                                                                  const std::string& owner);

}  // namespace cellgate::gateway
