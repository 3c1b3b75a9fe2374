// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include "nbhttp/annotations.h"

using namespace cellgate::nbhttp;
namespace http = cellgate::http;
using nlohmann::json;

TEST_CASE("notebook-http annotations follow Kernel Gateway's regexes", "[nbhttp]") {
  auto a = parse_annotation("# GET /hello\nprint('hi')", "#");
  REQUIRE(a);
  CHECK(!a->response_info);
  CHECK(a->verb == "GET");
  CHECK(a->path == "/hello");

  a = parse_annotation("# ResponseInfo POST /items/:id  \nprint('{}')", "#");
  REQUIRE(a);
  CHECK(a->response_info);
  CHECK(a->verb == "POST");
  CHECK(a->path == "/items/:id");

  a = parse_annotation("#\tDELETE\t/a/b", "#");
  REQUIRE(a);
  CHECK(a->path == "/a/b");
  CHECK(parse_annotation("// PUT /x", "//")->verb == "PUT");
  // \s+ matches newlines too, as in Python.
  CHECK(parse_annotation("#\nGET /late", "#")->path == "/late");

  CHECK(!parse_annotation("#GET /x", "#"));               // no space after the comment
  CHECK(!parse_annotation(" # GET /x", "#"));             // must start the cell
  CHECK(!parse_annotation("# PATCH /x", "#"));            // only GET, PUT, POST, DELETE
  CHECK(!parse_annotation("# get /x", "#"));              // case matters
  CHECK(!parse_annotation("# GETX /x", "#"));
  CHECK(!parse_annotation("# GET x", "#"));               // the path starts with /
  CHECK(!parse_annotation("# ResponseInfoGET /x", "#"));
  CHECK(!parse_annotation("x = 1\n# GET /x", "#"));
  CHECK(!parse_annotation("# GET /x", "//"));
  CHECK(comment_prefix_for("scala") == "//");
  CHECK(comment_prefix_for("python") == "#");
}

TEST_CASE("endpoints collect their cells and sort like Kernel Gateway", "[nbhttp]") {
  std::vector<std::string> cells = {
      "import json",
      "# GET /a/:x/b",
      "# GET /a/b/:y",
      "# POST /items/:id\nprint(1)",
      "# GET /hello\nprint('hi')",
      "# ResponseInfo GET /hello\nprint('{}')",
      "# GET /hello\nprint('again')",
      "# ResponseInfo GET /orphan",
      "# GET /:any",
  };
  auto eps = collect_endpoints(cells, "#");
  REQUIRE(eps.size() == 5);
  CHECK(eps[0].path == "/hello");  // no parameter: first
  CHECK(eps[1].path == "/a/b/:y"); // first parameter deepest
  CHECK(eps[2].path == "/a/:x/b");
  CHECK(eps[3].path == "/items/:id");  // same depth: notebook order
  CHECK(eps[4].path == "/:any");
  CHECK(eps[0].sources.at("GET") == "# GET /hello\nprint('hi')\n# GET /hello\nprint('again')\n");
  CHECK(eps[0].response_sources.at("GET") == "# ResponseInfo GET /hello\nprint('{}')\n");
  CHECK(eps[3].sources.count("POST") == 1);
  CHECK(eps[3].sources.count("GET") == 0);
}

TEST_CASE("paths match segment by segment with :name parameters", "[nbhttp]") {
  std::map<std::string, std::string> p;
  CHECK(match_path("/hello", "/hello", p));
  CHECK(p.empty());
  CHECK(!match_path("/hello", "/hello/", p));
  CHECK(!match_path("/hello", "/hell", p));
  CHECK(!match_path("/hello", "/hello/x", p));
  CHECK(match_path("/items/:id", "/items/42", p));
  CHECK(p.at("id") == "42");
  CHECK(match_path("/items/:id", "/items/a%20b", p));
  CHECK(p.at("id") == "a b");
  CHECK(!match_path("/items/:id", "/items/", p));
  CHECK(!match_path("/items/:id", "/items/1/2", p));
  CHECK(match_path("/u/:user/post-:n", "/u/ann/post-7", p));
  CHECK(p.at("user") == "ann");
  CHECK(p.at("n") == "7");
  CHECK(!match_path("/u/:user/post-:n", "/u/ann/post-", p));
  // Literal segments are compared encoded, as Tornado matches the raw path.
  CHECK(!match_path("/a b", "/a%20b", p));

  auto eps = collect_endpoints({"# GET /items/:id", "# GET /items/new"}, "#");
  auto* e = find_endpoint(eps, "/items/new", p);
  REQUIRE(e);
  CHECK(e->path == "/items/new");
  e = find_endpoint(eps, "/items/9", p);
  REQUIRE(e);
  CHECK(e->path == "/items/:id");
  CHECK(!find_endpoint(eps, "/nothing", p));
}

TEST_CASE("REQUEST carries body, args, path and headers as Kernel Gateway builds them", "[nbhttp]") {
  Request req{http::verb::post, "/items/7?q=a+b&q=c&flag=&x=%2F", 11};
  req.set("content-type", "application/json; charset=utf-8");
  req.set("X-Custom", "1");
  req.insert("x-custom", "2");
  req.body() = R"({"name": "widget"})";
  auto b = request_bundle(req, {{"id", "7"}});
  CHECK(b["body"] == json{{"name", "widget"}});
  CHECK(b["args"]["q"] == json::array({"a b", "c"}));
  CHECK(b["args"]["flag"] == json::array({""}));
  CHECK(b["args"]["x"] == json::array({"/"}));
  CHECK(b["path"] == json{{"id", "7"}});
  CHECK(b["headers"]["Content-Type"] == "application/json; charset=utf-8");
  CHECK(b["headers"]["X-Custom"] == json::array({"1", "2"}));

  CHECK(b["headers"].count("Authorization") == 0);
  req.set(http::field::authorization, "token secret");
  req.target("/items/7?token=secret&q=1");
  CHECK(request_bundle(req, {})["headers"]["Authorization"] == "token secret");
  CHECK(request_bundle(req, {})["args"].count("token") == 1);
  auto stripped = request_bundle(req, {}, /*strip_credentials=*/true);
  CHECK(stripped["headers"].count("Authorization") == 0);
  CHECK(stripped["args"] == json{{"q", {"1"}}});

  req.set("content-type", "application/json");
  req.body() = "not json";
  CHECK(request_bundle(req, {})["body"] == "not json");
  req.set("content-type", "application/x-www-form-urlencoded");
  req.body() = "a=1&a=2&b=x%26y";
  CHECK(request_bundle(req, {})["body"] == json{{"a", {"1", "2"}}, {"b", {"x&y"}}});
  req.set("content-type", "text/plain");
  req.body() = "raw\ntext";
  CHECK(request_bundle(req, {})["body"] == "raw\ntext");
}

TEST_CASE("the REQUEST statement is an ASCII string literal of the JSON", "[nbhttp]") {
  json bundle = {{"body", "é\"\n"}, {"args", json::object()}, {"path", json::object()}, {"headers", json::object()}};
  std::string st = request_statement(bundle, "python").value();
  REQUIRE(st.starts_with("REQUEST = \""));
  for (char c : st) CHECK(static_cast<unsigned char>(c) < 0x80);
  auto literal = json::parse(st.substr(10));
  CHECK(json::parse(literal.get<std::string>()) == bundle);
  CHECK(request_statement(bundle, "perl")->starts_with("my $REQUEST = '"));
  CHECK(request_statement(bundle, "bash")->starts_with("REQUEST='"));
  CHECK(request_statement(bundle, "R")->starts_with("REQUEST <- \""));
  CHECK(!request_statement(bundle, "julia"));
}
