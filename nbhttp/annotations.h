// SPDX-License-Identifier: BSD-3-Clause
// annotations: Kernel Gateway's notebook-http annotations, kept exactly so existing notebooks work.
// A code cell whose source starts with `# GET /path` (also PUT, POST, DELETE; `//` for Scala) is the
// body of that endpoint; `# ResponseInfo GET /path` cells print {"status", "headers"} for it. Path
// segments `:name` capture one segment. Pure functions, no I/O.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/http/types.h"

namespace cellgate::nbhttp {

using http::Request;

struct Annotation {
  bool response_info = false;
  std::string verb;  // GET, PUT, POST or DELETE
  std::string path;  // as annotated, trimmed, e.g. /items/:id
};

// KG's `{prefix}\s+(GET|PUT|POST|DELETE)\s+(\/.*)+` and `{prefix}\s+ResponseInfo\s+(...)\s+(\/.*)+`,
// matched at the start of the cell; nullopt for other cells.
std::optional<Annotation> parse_annotation(std::string_view source, std::string_view comment_prefix);
// KG's comment_prefix map: "//" for scala, "#" for everything else.
std::string comment_prefix_for(std::string_view language);

struct Endpoint {
  std::string path;
  std::map<std::string, std::string> sources;           // verb → the annotated cells, each followed by '\n'
  std::map<std::string, std::string> response_sources;  // verb → its ResponseInfo cells
};

// The endpoints of a notebook's code cells, in KG's match order: paths without parameters first, then by
// the depth of their first parameter, deepest first; ties keep notebook order.
std::vector<Endpoint> collect_endpoints(const std::vector<std::string>& sources, std::string_view comment_prefix);

// Matches a request path (raw, still percent-encoded, as Tornado does) against an annotated path: the
// same number of segments, literal segments equal, `prefix:name` segments start with prefix and capture
// the non-empty rest (percent-decoded). Fills params on success.
bool match_path(std::string_view pattern, std::string_view path, std::map<std::string, std::string>& params);
// The first endpoint matching path, or null.
const Endpoint* find_endpoint(const std::vector<Endpoint>& endpoints, std::string_view path,
                              std::map<std::string, std::string>& params);

// KG's REQUEST object: {body, args, path, headers}. body is parsed for application/json (falling back to
// the text) and application/x-www-form-urlencoded ({name: [values]}), else the text; args are the query's
// {name: [values]}; headers {Name: value, or [values] when repeated}, names in Tornado's capitalisation.
// strip_credentials drops the gateway's token (the Authorization header and the `token` argument): it
// authenticated the request and must not reach kernel code.
nlohmann::json request_bundle(const Request& req, const std::map<std::string, std::string>& params,
                              bool strip_credentials = false);
// The statement that sets REQUEST in the kernel to the bundle as JSON text (ASCII-only), which the cell
// decodes (json.loads, jsonlite::fromJSON, ...): `REQUEST = "..."` in Python, `REQUEST <- "..."` in R,
// `REQUEST='...'` in bash, `my $REQUEST = '...';` in perl, in each language a string literal that its
// parser reads as data (launcher::string_literal). nullopt for a language without a checked literal.
std::optional<std::string> request_statement(const nlohmann::json& bundle, std::string_view language);

}  // namespace cellgate::nbhttp
