// SPDX-License-Identifier: BSD-3-Clause
// inherited_state: what a caller's process state would hand to a jailed command, and shedding it.
#pragma once

namespace cellgate::isolation {

// Scheduling policy, personality, oom_score_adj, nice and the I/O class survive clone and execve
// (sched(7), personality(2), proc(5), setpriority(2), ioprio_set(2)); the jailed command could not
// undo a generous value itself. Resets each to the ordinary default when the caller's is more
// generous. runs in: the helper, before clone (a jail) or fork (a join): the one place both call.
void shed_inherited_state();

}  // namespace cellgate::isolation
