// SPDX-License-Identifier: BSD-3-Clause
// kernelspecs_api: kernelspecs and their resources.
#include "gateway/api/kernelspecs_api.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "gateway/kernel_manager.h"

namespace cellgate::api {

using boost::asio::awaitable;
using common::Errc;

namespace {

std::string content_type_for(const std::string& file) {
  auto ends = [&](const char* ext) {
    return file.size() >= strlen(ext) && file.compare(file.size() - strlen(ext), strlen(ext), ext) == 0;
  };
  if (ends(".png")) return "image/png";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".js")) return "application/javascript";
  if (ends(".css")) return "text/css";
  return "application/octet-stream";
}

}  // namespace

awaitable<http::Reply> KernelspecsApi::list(Call& call) {
  auto specs = kernels_.kernelspecs();
  nlohmann::json all = nlohmann::json::object();
  for (const auto& [name, spec] : specs) all[name] = launcher::kernelspec_model(spec, base_url_);
  std::string def = default_kernel_;
  if (!specs.count(def) && !specs.empty()) def = specs.begin()->first;
  co_return reply(http::json_response(call.req, http::status::ok, {{"default", def}, {"kernelspecs", all}}));
}

awaitable<http::Reply> KernelspecsApi::get(Call& call) {
  auto specs = kernels_.kernelspecs();
  const std::string& name = call.param("name");
  auto spec = specs.find(name);
  if (spec == specs.end()) co_return reply(http::error_response(call.req, Errc::kNotFound, "Kernel spec " + name + " not found"));
  co_return reply(http::json_response(call.req, http::status::ok, launcher::kernelspec_model(spec->second, base_url_)));
}

awaitable<http::Reply> KernelspecsApi::resource(Call& call) {
  auto specs = kernels_.kernelspecs();
  const std::string& name = call.param("name");
  const std::string& file = call.param("file");
  auto spec = specs.find(name);
  if (spec == specs.end()) co_return reply(http::error_response(call.req, Errc::kNotFound, "No such kernelspec " + name));
  const auto& listed = spec->second.resources;
  if (std::find(listed.begin(), listed.end(), file) == listed.end())
    co_return reply(http::error_response(call.req, Errc::kNotFound, "No such resource " + file));
  std::ifstream in(spec->second.dir + "/" + file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  http::Response res{http::status::ok, call.req.version()};
  res.set(http::field::content_type, content_type_for(file));
  res.set(http::field::cache_control, "max-age=3600");
  res.keep_alive(call.req.keep_alive());
  res.body() = ss.str();
  res.prepare_payload();
  co_return reply(std::move(res));
}

}  // namespace cellgate::api
