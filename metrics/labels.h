// SPDX-License-Identifier: BSD-3-Clause
// labels: every label value a metric may carry, as enums, so that cardinality is fixed in code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cellgate::metrics {

// How a kernel came to be: a cold jailed start, a fork of cellgate-zygote, or a warm-pool claim.
enum class StartPath : uint8_t { kCold, kForkServer, kWarmPool, kCount };

// Why a kernel restarted: a client asked, its process died (the restarter), it missed
// heartbeats, or a cell ran past --execute-limit and would not take the interrupt.
enum class RestartReason : uint8_t { kRequested, kDied, kHeartbeat, kExecuteLimit, kCount };

// Why a request was refused: no or a wrong token (401), the auth-failure rate limit (429), a
// user's quota (kernels, connections), a server limit (--max-kernels: 403), a route the caller's
// role may not use (403), or the transport's size bounds: the request head (431), the body (413), a
// WebSocket message (close 1009).
enum class RefusedReason : uint8_t {
  kAuth, kRateLimit, kQuota, kLimit, kForbidden, kHeaderTooLarge, kBodyTooLarge, kMessageTooBig, kCount
};

// Why the egress proxy refused a kernel's connection (its audit record's "refused_by"): no rule
// for the target, an address the rule does not permit, a cap, a request it cannot read, an upstream
// it cannot reach; anything else, and refusals the proxy could not report one by one, are kOther.
enum class EgressRefusal : uint8_t { kPolicy, kAddress, kLimit, kRequest, kUpstream, kOther, kCount };

// A kernel's state as clients see it, plus paused (the freezer) and dead.
enum class KernelState : uint8_t { kStarting, kIdle, kBusy, kPaused, kRestarting, kDead, kCount };

// Where a jail failed to start: cellgate-jail's setup stages in the parent, then the child's
// checklist (isolation/child/run_child.h). Anything else is kOther.
enum class JailStage : uint8_t {
  kOptions, kPlan, kUidSlot, kCgroup, kSeccomp, kWorkspace, kPrepare, kClone, kIdMap, kSync,
  kMount, kPivotRoot, kCapabilities, kCredentials, kNoNewPrivs, kExec, kInit, kTimeout, kOther, kCount
};

std::string_view label(StartPath v);
std::string_view label(RestartReason v);
std::string_view label(RefusedReason v);
std::string_view label(KernelState v);
std::string_view label(JailStage v);
std::string_view label(EgressRefusal v);

// The stage word of a cellgate-jail failure ("cellgate-jail: <stage>: <strerror>", or the
// "stage" of its status JSON), mapped onto the bounded set. Unknown words are kOther.
JailStage jail_stage_from_name(std::string_view stage);
// "policy", "address", ... as label() writes them; anything else is kOther.
EgressRefusal egress_refusal_from(std::string_view refused_by);
// "idle", "busy", "starting", "restarting", "dead" (the Jupyter execution_state); paused wins.
KernelState kernel_state_from(std::string_view execution_state, bool paused);

}  // namespace cellgate::metrics
