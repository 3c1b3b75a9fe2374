// SPDX-License-Identifier: BSD-3-Clause
// kernel_network: the network policy a kernel gets, from its kernelspec, its owner's limit and the
// request (egress/policy.h is the format, egress/policy_bounds.h the narrowing). Pure.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "egress/policy.h"
#include "kernel-launcher/kernelspec.h"
#include "state/users.h"

namespace cellgate::gateway {

// The kernelspec's metadata.cellgate.network (nullopt when it has none). Errors (kBadRequest) name
// the kernelspec and the field: `kernelspec py-net: metadata.cellgate.network.allow[0].ports[0]: ...`.
common::Result<std::optional<egress::Policy>> kernelspec_network(const launcher::KernelSpec& spec, bool ip_rules);

// The kernel's policy. With a request (POST /api/kernels "network"): the request narrowed to the
// bound (the user's limit when an admin set one, else the kernelspec's, else none); a policy that does not parse is kBadRequest naming `network...`, one past the bound is
// kForbidden naming the rule or limit. Without one: the kernelspec's (none when it has none), narrowed
// to the user's limit when there is one. Headers always come from the operator's rules: a request
// inherits those of the bound's rule that covers it.
common::Result<egress::Policy> kernel_network(const launcher::KernelSpec& spec, const state::User& user,
                                              const std::optional<nlohmann::json>& requested, bool ip_rules);

}  // namespace cellgate::gateway
