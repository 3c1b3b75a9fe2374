// SPDX-License-Identifier: BSD-3-Clause
// web_dump: writes the embedded assets to DIR with a manifest, so that a test serves exactly the
// bytes compiled into cellgate. usage: web_dump DIR
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "web/assets.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fputs("usage: web_dump DIR\n", stderr);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  nlohmann::json manifest = nlohmann::json::object();
  int n = 0;
  for (const auto& a : cellgate::web::all_assets()) {
    const std::string file = "asset-" + std::to_string(n++);
    std::ofstream(dir / file, std::ios::binary).write(a.body.data(), static_cast<std::streamsize>(a.body.size()));
    manifest[std::string(a.path)] = {{"file", file}, {"content_type", a.content_type}, {"etag", a.etag}};
  }
  manifest["/headers"] = {{"Content-Security-Policy", cellgate::web::kContentSecurityPolicy},
                          {"Referrer-Policy", cellgate::web::kReferrerPolicy},
                          {"Cache-Control", cellgate::web::kCacheControl},
                          {"X-Content-Type-Options", "nosniff"}};
  std::ofstream(dir / "manifest.json") << manifest.dump(2) << "\n";
  return 0;
}
