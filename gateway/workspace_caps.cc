// SPDX-License-Identifier: BSD-3-Clause
// workspace_caps: the limits a workspace is held to are its owner's, whoever acts on it.
#include "gateway/workspace_caps.h"

namespace cellgate::gateway {

workspace::WorkspaceConfig workspace_config_for(const workspace::WorkspaceConfig& base, const state::User& user) {
  auto wc = base;
  if (user.limits.workspace_bytes) wc.max_bytes = static_cast<uint64_t>(*user.limits.workspace_bytes);
  if (user.limits.workspace_files) wc.max_files = static_cast<uint64_t>(*user.limits.workspace_files);
  if (user.limits.store_bytes) wc.store_bytes = static_cast<uint64_t>(*user.limits.store_bytes);
  return wc;
}

common::Result<workspace::WorkspaceConfig> owner_workspace_config(const workspace::WorkspaceConfig& base,
                                                                  state::UserStore& users, const state::User& caller,
                                                                  const std::string& owner) {
  if (owner == caller.name) return workspace_config_for(base, caller);
  auto user = users.get_user(owner);
  if (user) return workspace_config_for(base, user.value());
  if (user.error().code == common::Errc::kNotFound) return base;
  return user.error();
}

}  // namespace cellgate::gateway
