// SPDX-License-Identifier: BSD-3-Clause
// language_literal: each language's literal read back by that language's own interpreter from Debian
// (python3, R, bash, perl, ruby, octave, node), with payloads holding every metacharacter and the
// interpolations each language would evaluate; none of them may run (a canary file stays absent).
#include "kernel-launcher/language_literal.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using cellgate::launcher::assign_statement;
using cellgate::launcher::string_literal;

namespace {

struct Interpreter {
  const char* language;
  const char* file;     // the program's file name (some interpreters want an extension)
  const char* command;  // run with the program's path appended
  const char* print;    // a statement writing the variable REQUEST to stdout, nothing else
};

constexpr Interpreter kInterpreters[] = {
    {"python", "p.py", "/usr/bin/python3 -I", "import sys; sys.stdout.write(REQUEST)"},
    {"R", "p.R", "/usr/bin/Rscript --vanilla", "cat(REQUEST)"},
    {"bash", "p.sh", "/bin/bash --norc", "printf %s \"$REQUEST\""},
    {"perl", "p.pl", "/usr/bin/perl", "print $REQUEST;"},
    {"ruby", "p.rb", "/usr/bin/ruby", "print REQUEST"},
    {"octave", "p.m", "/usr/bin/octave-cli --no-gui --norc --quiet", "printf('%s', REQUEST);"},
    {"javascript", "p.js", "/usr/bin/node", "process.stdout.write(REQUEST);"},
};

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char t[] = "/tmp/cg-literal-XXXXXX";
    REQUIRE(::mkdtemp(t) != nullptr);
    path = t;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

// Runs the command with `program` as its last argument, in dir; its stdout, and its exit status.
std::string run(const std::string& command, const std::filesystem::path& dir, const std::string& program, int& status) {
  std::string cmd = "cd '" + dir.string() + "' && " + command + " '" + program + "' 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = ::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  status = ::pclose(p);
  return out;
}

// Payloads that are code in some language when spliced into a string literal the wrong way.
std::string attack(const std::string& canary) {
  const std::string touch = "touch " + canary;
  std::string s;
  for (int c = 0; c < 256; ++c) s += static_cast<char>(c);  // every byte; the JSON dump makes it ASCII
  s += "\n$(" + touch + ")`" + touch + "`${IFS}$((1+1))";               // bash, julia
  s += "@{[ system('" + touch + "') ]}${\\ system('" + touch + "')}";  // perl
  s += "#{system('" + touch + "')}#{`" + touch + "`}";                 // ruby
  s += "'; system('" + touch + "'); '\"; system('" + touch + "'); \"";  // quote breakers
  s += "\\'; system(\"" + touch + "\") #\\\"); system('" + touch + "') #";
  s += "'\\''; " + touch + "; '\\'' '' \"\" \\\\\" \\\\' \\u0000 \\x00 \\N{LATIN SMALL LETTER A} %s %d \\";
  s += "\xe2\x80\xa8\xe2\x80\xa9\xef\xbb\xbf\xf0\x9f\x98\x80 \r\n\t\x7f";  // line/paragraph separators, BOM, astral
  return s;
}

}  // namespace

TEST_CASE("a literal holds printable ASCII only, else nothing", "[language_literal]") {
  CHECK(string_literal("python", "a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(string_literal("bash", "it's $HOME") == "'it'\\''s $HOME'");
  CHECK(string_literal("octave", "it's") == "'it''s'");
  CHECK(string_literal("perl", "a'b\\c$d@e") == "'a\\'b\\\\c$d@e'");
  CHECK(!string_literal("python", "a\nb"));
  CHECK(!string_literal("python", "\x7f"));
  CHECK(!string_literal("python", "\xc3\xa9"));
  CHECK(!string_literal("julia", "a"));  // no interpreter in Debian 12 to check a rule against
  CHECK(!string_literal("scala", "a"));
  CHECK(string_literal("PYTHON", "a"));
  CHECK(assign_statement("R", "REQUEST", "x") == "REQUEST <- \"x\"");
  CHECK(assign_statement("perl", "REQUEST", "x") == "my $REQUEST = 'x';");
  CHECK(assign_statement("bash", "REQUEST", "x") == "REQUEST='x'");
}

TEST_CASE("JSON with ensure_ascii is printable ASCII for any input", "[language_literal]") {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  auto text = nlohmann::json(all).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  CHECK(string_literal("python", text));
}

TEST_CASE("every language's own parser reads the literal back as the text, running none of it", "[language_literal]") {
  TempDir dir;
  const auto canary = dir.path / "pwned";
  // As notebook-http passes REQUEST: the bundle as JSON text, ASCII-only.
  nlohmann::json bundle = {{"body", attack(canary.string())}, {"args", {{"q", {attack(canary.string())}}}}};
  const std::string text = bundle.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  const std::string big(300000, 'x');  // a large body: no parser limit on a literal's length
  for (const auto& interp : kInterpreters) {
    for (const std::string& value : {text, big, std::string()}) {
      INFO("language " << interp.language << ", value of " << value.size() << " bytes");
      auto stmt = assign_statement(interp.language, "REQUEST", value);
      REQUIRE(stmt);
      {
        std::ofstream f(dir.path / interp.file, std::ios::trunc);
        f << *stmt << "\n" << interp.print << "\n";
      }
      int status = 0;
      std::string out = run(interp.command, dir.path, interp.file, status);
      INFO("interpreter exit status " << status << " (is it installed? scripts/install-deps.sh)");
      CHECK(status == 0);
      CHECK(out == value);
      CHECK(!std::filesystem::exists(canary));
    }
  }
}
