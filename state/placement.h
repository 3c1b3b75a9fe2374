// SPDX-License-Identifier: BSD-3-Clause
// placement: which node starts a new kernel, picked and recorded in one transaction (docs/cluster.md):
// the owner's quota counted across every node, the workspace's node first, else the live node with
// the most memory left uncommitted. No lock is held across the network: the kernel's row is written
// "placing" here, and the chosen node turns it into the running kernel (or deletes it).
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "state/database.h"

namespace cellgate::state {

struct PlacementRequest {
  std::string kernel_id;
  std::string owner;
  std::string kernelspec;
  std::string workspace;
  std::string created;            // iso8601
  int64_t memory_bytes = 0;       // the kernel's memory limit, committed on the node that takes it
  int64_t max_user_kernels = 0;   // the owner's quota, counted over every node; 0 = none
  int64_t lease_ms = 10000;       // a node whose heartbeat is older is not a candidate
};

struct Placement {
  std::string node;
  std::string address;        // its internal listener
  std::string previous_node;  // where the workspace was before ("" = nowhere yet)
};

// Errors: kForbidden at the quota (the message names max_kernels, as on one node); kUnavailable when no
// node can take the kernel (none up, every one draining or at its max_kernels, or the workspace's node
// full); kBadRequest for bad names; kConflict for a duplicate kernel id.
common::Result<Placement> place_kernel(Database& db, const PlacementRequest& request);
// Deletes a row placement wrote, unless its node has turned it into a kernel already.
common::Status unplace_kernel(Database& db, const std::string& kernel_id);

}  // namespace cellgate::state
