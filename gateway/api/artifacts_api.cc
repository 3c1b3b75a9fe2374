// SPDX-License-Identifier: BSD-3-Clause
// artifacts_api: /api/artifacts and the signed links.
#include "gateway/api/artifacts_api.h"

#include <sys/stat.h>

#include <cctype>
#include <chrono>
#include <filesystem>

#include <fmt/core.h>

#include "common/log.h"
#include "common/random.h"
#include "common/time_format.h"
#include "gateway/api/kernels_api.h"
#include "gateway/audit.h"
#include "gateway/http/range_request.h"
#include "gateway/kernel_manager.h"
#include "gateway/workspace_caps.h"
#include "gateway/offload.h"
#include "state/artifact_records.h"
#include "state/users.h"
#include "state/workspace_records.h"
#include "workspace/pins.h"
#include "workspace/safe_path.h"

namespace cellgate::api {

using boost::asio::awaitable;
using common::Errc;
using nlohmann::json;

namespace {

constexpr int64_t kDefaultLinkLifetimeS = 3600;

int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

json model(const state::ArtifactRow& a) {
  json j = {{"id", a.id},
            {"name", a.name},
            {"owner", a.owner},
            {"workspace", a.workspace},
            {"path", a.path},
            {"sha256", a.sha256},
            {"size", a.size},
            {"media_type", a.media_type},
            {"published_by", a.published_by},
            {"created", a.created},
            {"kernel_id", a.kernel_id.empty() ? json(nullptr) : json(a.kernel_id)},
            {"execution_count", a.execution_count ? json(*a.execution_count) : json(nullptr)},
            {"snapshot", a.snapshot.empty() ? json(nullptr) : json(a.snapshot)}};
  return j;
}

// The name as a Content-Disposition parameter (RFC 6266): an ASCII fallback, and the UTF-8 name
// percent-encoded (RFC 8187). validate_artifact_name kept '"', '\\' and control characters out.
std::string disposition(const std::string& name) {
  std::string ascii, encoded;
  for (unsigned char c : name) {
    ascii += c < 0x80 ? static_cast<char>(c) : '_';
    const bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                       c == '.' || c == '-' || c == '_';
    encoded += plain ? std::string(1, static_cast<char>(c)) : fmt::format("%{:02X}", c);
  }
  return "attachment; filename=\"" + ascii + "\"; filename*=UTF-8''" + encoded;
}

// A Host header fit to put in a URL: a name or address and a port, nothing that could end the authority.
bool host_ok(std::string_view host) {
  if (host.empty() || host.size() > 255) return false;
  for (unsigned char c : host)
    if (!(std::isalnum(c) || c == '.' || c == '-' || c == ':' || c == '[' || c == ']')) return false;
  return true;
}

http::Reply refusal(const http::Request& req, http::status status, std::string message) {
  return reply(http::json_response(
      req, status, {{"reason", std::string(http::obsolete_reason(status))}, {"message", std::move(message)}}));
}

}  // namespace

awaitable<http::Reply> ArtifactsApi::publish(Call& call) {
  auto body = parse_object_body(call.req);
  if (!body) co_return reply(http::error_response(call.req, body.error()));
  auto p = body->find("path");
  if (p == body->end() || !p->is_string())
    co_return reply(http::error_response(call.req, Errc::kBadRequest, "body must be {\"path\": string, \"name\"?: string}"));
  const std::string path = p->get<std::string>();
  if (auto st = workspace::validate_relative_path(path); !st) co_return reply(http::error_response(call.req, st.error()));
  std::string name = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  if (auto n = body->find("name"); n != body->end() && !n->is_null()) {
    if (!n->is_string()) co_return reply(http::error_response(call.req, Errc::kBadRequest, "name must be a string"));
    name = n->get<std::string>();
  }
  if (auto st = gateway::validate_artifact_name(name); !st) co_return reply(http::error_response(call.req, st.error()));

  const auto& ref = *call.workspace_ref;
  if (auto full = over_count(ref.owner)) co_return reply(http::error_response(call.req, *full));
  auto history = state::list_snapshots(db_, ref.owner, ref.name);
  const std::vector<state::SnapshotRow> rows = history ? std::move(history.value()) : std::vector<state::SnapshotRow>{};
  // The store is the workspace owner's, and so is the quota: an admin publishing into another user's
  // workspace spends that user's store_bytes, not the admin's own.
  auto limits = owner_limits(call.caller.user, ref.owner);
  if (!limits) co_return reply(http::error_response(call.req, limits.error()));
  const std::string id = common::random_hex(16);
  auto stored = co_await offload_.run(
      [&] { return store_.store_file(*call.workspace, ref.owner, id, path, rows, *limits); });
  if (!stored) {
    audit_.record(call.caller.user.name, "publish", "artifact", id, {{"path", path}, {"error", stored.error().message}}, false);
    co_return reply(http::error_response(call.req, stored.error()));
  }
  state::ArtifactRow row{id, ref.owner, name, ref.name, path, stored->sha256, static_cast<int64_t>(stored->size),
                         gateway::media_type_for(name), call.caller.user.name, common::iso8601_now(),
                         stored->kernel_id, stored->execution_count, stored->snapshot};
  // Again now, on the io thread where the count and the insert cannot interleave with another publish's.
  auto full = over_count(ref.owner);
  if (auto st = full ? common::Status(*full) : state::insert_artifact(db_, row); !st) {
    (void)co_await offload_.run([&] { return store_.unpin(ref.owner, id); });
    co_return reply(http::error_response(call.req, st.error()));
  }
  audit_.record(call.caller.user.name, "publish", "artifact", id, {{"path", path}, {"sha256", row.sha256}});
  http::Response res = http::json_response(call.req, http::status::created, model(row));
  res.set(http::field::location, options_.base_url + "api/artifacts/" + id);
  co_return reply(std::move(res));
}

common::Result<gateway::ArtifactLimits> ArtifactsApi::owner_limits(const state::User& caller, const std::string& owner) {
  state::UserStore users(db_);
  auto caps = gateway::owner_workspace_config(workspaces_.config(), users, caller, owner);
  if (!caps) return caps.error();
  return gateway::ArtifactLimits{caps->store_bytes};
}

void ArtifactsApi::remove_orphaned_pins() {
  const std::string root = workspaces_.pins().path + "/" + gateway::kArtifactPinKind;
  // Pins beside a shared store are every node's: a publish on another node writes its pin, then its
  // row; a pin that young is left for the next start.
  const bool shared = !workspaces_.config().store_dir.empty();
  constexpr auto kPublishInFlight = std::chrono::minutes(10);
  const auto now = std::filesystem::file_time_type::clock::now();
  std::error_code ec;
  for (const auto& dir : std::filesystem::directory_iterator(root, ec)) {
    const std::string owner = dir.path().filename().string();
    if (owner.empty() || owner[0] == '.') continue;
    auto ids = store_.pinned(owner);
    if (!ids) {
      common::log_warn("owner={} msg=\"artifact pins not read\" error=\"{}\"", owner, ids.error().message);
      continue;
    }
    for (const auto& id : ids.value()) {
      auto row = state::get_artifact(db_, id);
      if (row || row.error().code != Errc::kNotFound) continue;  // named, or the database cannot say: kept
      std::error_code age_ec;  // only read with a shared store
      const auto written = std::filesystem::last_write_time(dir.path() / id, age_ec);
      if (shared && (age_ec || now - written < kPublishInFlight)) continue;
      auto st = store_.unpin(owner, id);
      if (st) common::log_warn("owner={} artifact={} msg=\"artifact pin without a row removed (a publish or delete a crash cut short)\"", owner, id);
      else common::log_warn("owner={} artifact={} msg=\"orphaned artifact pin not removed\" error=\"{}\"", owner, id, st.error().message);
    }
  }
}

std::optional<common::Error> ArtifactsApi::over_count(const std::string& owner) {
  if (options_.max_per_user <= 0) return std::nullopt;
  auto held = state::count_artifacts(db_, owner);
  if (!held) return held.error();
  if (held.value() < options_.max_per_user) return std::nullopt;
  return common::make_error(
      Errc::kForbidden,
      fmt::format("{} holds {} artifacts, the most allowed (max_artifacts_per_user); delete some first", owner, held.value()));
}

awaitable<http::Reply> ArtifactsApi::list(Call& call) {
  std::optional<std::string> owner = call.caller.user.name;
  if (call.caller.user.admin) {
    std::string o = call.query("owner");
    owner = o.empty() ? std::nullopt : std::optional<std::string>(o);
  }
  auto rows = state::list_artifacts(db_, owner);
  if (!rows) co_return reply(http::error_response(call.req, rows.error()));
  json list = json::array();
  for (const auto& r : rows.value()) list.push_back(model(r));
  co_return reply(http::json_response(call.req, http::status::ok, list));
}

awaitable<http::Reply> ArtifactsApi::download(Call& call) { co_return co_await serve(call.req, *call.artifact); }

awaitable<http::Reply> ArtifactsApi::serve(const http::Request& req, const state::ArtifactRow& row) {
  auto fd = co_await offload_.run([&] { return store_.open(row.sha256); });
  if (!fd && fd.error().code == Errc::kNotFound)
    co_return reply(http::error_response(req, Errc::kInternal, "artifact " + row.id + ": its bytes are missing from the store"));
  if (!fd) co_return reply(http::error_response(req, fd.error()));
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0 || static_cast<uint64_t>(st.st_size) != static_cast<uint64_t>(row.size))
    co_return reply(http::error_response(req, Errc::kInternal, "artifact " + row.id + ": its stored size is not its recorded size"));
  const uint64_t size = static_cast<uint64_t>(row.size);
  const std::string etag = "\"" + row.sha256 + "\"";
  // If-Range (RFC 9110 13.1.5): a range of what the client already holds, else the whole. An artifact
  // never changes, so a strong validator that differs only means another artifact.
  http::RangeDecision range;
  const std::string if_range(req[http::field::if_range]), range_header(req[http::field::range]);
  if (if_range.empty() || if_range == etag) range = http::decide_range(range_header, size);

  http::Reply out;
  http::status status = http::status::ok;
  if (range.answer == http::RangeAnswer::kUnsatisfiable) {
    out = refusal(req, http::status::range_not_satisfiable,
                  fmt::format("range '{}' is outside the artifact's {} bytes", range_header, size));
    out.res.set(http::field::content_range, http::content_range(range, size));
    co_return out;
  }
  uint64_t first = 0, length = size;
  if (range.answer == http::RangeAnswer::kPartial) {
    status = http::status::partial_content;
    first = range.range.first;
    length = range.range.length;
  }
  out.res = http::Response{status, req.version()};
  if (status == http::status::partial_content) out.res.set(http::field::content_range, http::content_range(range, size));
  out.res.set(http::field::content_type, row.media_type);
  out.res.set(http::field::content_disposition, disposition(row.name));
  out.res.set(http::field::etag, etag);
  out.res.set(http::field::accept_ranges, "bytes");
  out.res.set(http::field::cache_control, "private, no-store");
  // The bytes are a kernel's, hence hostile: never rendered as the gateway's own page (stored XSS
  // through an HTML or SVG artifact), never sniffed into something else.
  out.res.set("X-Content-Type-Options", "nosniff");
  out.res.set("Content-Security-Policy", "sandbox; default-src 'none'");
  out.res.set("Referrer-Policy", "no-referrer");
  out.res.keep_alive(req.keep_alive());
  out.res.content_length(length);
  out.file = http::FileBody{std::move(fd.value()), length, first};
  co_return out;
}

awaitable<http::Reply> ArtifactsApi::remove(Call& call) {
  const state::ArtifactRow row = *call.artifact;
  // The row first: a crash before the pin goes leaves bytes charged and kept, never a row without bytes.
  auto st = state::delete_artifact(db_, row.id);
  audit_.record(call.caller.user.name, "delete", "artifact", row.id, json::object(), st.has_value());
  if (!st) co_return reply(http::error_response(call.req, st.error()));
  (void)co_await offload_.run([&] { return store_.unpin(row.owner, row.id); });
  co_return reply(http::empty_response(call.req));
}

awaitable<http::Reply> ArtifactsApi::link(Call& call) {
  auto body = parse_object_body(call.req);
  if (!body) co_return reply(http::error_response(call.req, body.error()));
  int64_t lifetime = kDefaultLinkLifetimeS;
  if (auto e = body->find("expires_in"); e != body->end() && !e->is_null()) {
    if (!e->is_number_integer() || e->get<int64_t>() < 1 || e->get<int64_t>() > gateway::LinkSigner::kMaxLifetimeS)
      co_return reply(http::error_response(
          call.req, Errc::kBadRequest,
          fmt::format("expires_in must be an integer number of seconds in [1, {}]", gateway::LinkSigner::kMaxLifetimeS)));
    lifetime = e->get<int64_t>();
  }
  const int64_t expires = now_s() + lifetime;
  const std::string& id = call.artifact->id;
  const std::string path = fmt::format("{}api/shared/artifacts/{}?expires={}&signature={}", options_.base_url, id,
                                       expires, signer_.sign(id, expires));
  // Absolute with the address the caller reached the gateway at (their own Host: a bad one only makes
  // their own link useless); behind a proxy that rewrites it, "path" is what to put after the proxy's.
  const std::string host(call.req[http::field::host]);
  const std::string url = host_ok(host) ? (options_.https ? "https://" : "http://") + host + path : path;
  audit_.record(call.caller.user.name, "link", "artifact", id, {{"expires_in", lifetime}});
  co_return reply(http::json_response(call.req, http::status::created,
                                      {{"url", url},
                                       {"path", path},
                                       {"expires", common::iso8601(common::SystemTime(std::chrono::seconds(expires)))},
                                       {"expires_at", expires}}));
}

awaitable<http::Reply> ArtifactsApi::shared(Call& call) {
  const std::string& id = call.param("shared");
  // The signature before anything else: no lookup for a link the gateway did not make.
  switch (signer_.check(id, call.query("expires"), call.query("signature"), now_s())) {
    case gateway::LinkCheck::kMalformed:
    case gateway::LinkCheck::kBadSignature:
      co_return refusal(call.req, http::status::forbidden, "this link's signature is not valid");
    case gateway::LinkCheck::kExpired:
      co_return refusal(call.req, http::status::gone, "this link has expired; ask its owner for a new one");
    case gateway::LinkCheck::kValid: break;
  }
  auto row = state::get_artifact(db_, id);
  if (!row && row.error().code == Errc::kNotFound)
    co_return reply(http::error_response(call.req, Errc::kNotFound, "Artifact does not exist: " + id));
  if (!row) co_return reply(http::error_response(call.req, row.error()));
  co_return co_await serve(call.req, row.value());
}

}  // namespace cellgate::api
