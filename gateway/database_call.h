// SPDX-License-Identifier: BSD-3-Clause
// database_call: a statement run on the database thread (state/database_thread.h), awaited by a coroutine
// of the io thread, which goes on serving meanwhile.
#pragma once

#include <chrono>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "common/result.h"
#include "state/database_thread.h"

namespace cellgate::gateway {

// Posts work under tenant's share of the thread's queue and resumes, on the caller's executor, with its
// outcome; kTimeout once timeout has passed (a job still queued then is dropped; one running runs on to
// its own deadline, and nobody hears of it); kTooManyRequests at once when the queue or the tenant's
// share is full. Pass named objects, not temporaries (GCC 12 may destroy a temporary in a co_await
// operand twice: gateway/offload.h).
boost::asio::awaitable<common::Status> on_database_thread(state::DatabaseThread& thread, const std::string& tenant,
                                                          const state::DatabaseThread::Work& work,
                                                          std::chrono::milliseconds timeout);

}  // namespace cellgate::gateway
