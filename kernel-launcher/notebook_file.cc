// SPDX-License-Identifier: BSD-3-Clause
#include "kernel-launcher/notebook_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/fd_io.h"
#include "common/unique_fd.h"

namespace cellgate::launcher {

using common::Errc;
using common::make_error;

namespace {

constexpr std::size_t kMaxNotebookBytes = 64u << 20;

bool valid_source(const nlohmann::json& src) {
  if (src.is_string()) return true;
  if (!src.is_array()) return false;
  for (const auto& line : src) {
    if (!line.is_string()) return false;
  }
  return true;
}

}  // namespace

std::string cell_source(const nlohmann::json& cell) {
  auto it = cell.find("source");
  if (it == cell.end()) return {};
  if (it->is_string()) return it->get<std::string>();
  std::string out;
  if (it->is_array()) {
    for (const auto& line : *it) {
      if (line.is_string()) out += line.get_ref<const std::string&>();
    }
  }
  return out;
}

std::string Notebook::kernel_name() const {
  auto meta = doc.find("metadata");
  if (meta == doc.end() || !meta->is_object()) return {};
  auto ks = meta->find("kernelspec");
  if (ks == meta->end() || !ks->is_object()) return {};
  auto name = ks->find("name");
  return name != ks->end() && name->is_string() ? name->get<std::string>() : std::string();
}

std::string Notebook::language() const {
  auto meta = doc.find("metadata");
  if (meta == doc.end() || !meta->is_object()) return {};
  auto field = [&](const char* obj, const char* key) -> std::string {
    auto o = meta->find(obj);
    if (o == meta->end() || !o->is_object()) return {};
    auto v = o->find(key);
    return v != o->end() && v->is_string() ? v->get<std::string>() : std::string();
  };
  std::string lang = field("kernelspec", "language");
  if (lang.empty()) lang = field("language_info", "name");
  for (char& c : lang) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lang;
}

std::vector<NotebookCell> Notebook::code_cells() const {
  std::vector<NotebookCell> out;
  const auto& cells = doc.at("cells");
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (cells[i].value("cell_type", "") == "code") out.push_back({i, cell_source(cells[i])});
  }
  return out;
}

void Notebook::set_outputs(std::size_t index, nlohmann::json outputs, int count) {
  auto& cell = doc.at("cells").at(index);
  cell["outputs"] = std::move(outputs);
  cell["execution_count"] = count > 0 ? nlohmann::json(count) : nlohmann::json(nullptr);
}

common::Result<Notebook> parse_notebook(std::string_view text) {
  auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return make_error(Errc::kBadRequest, "not valid JSON");
  if (!doc.is_object()) return make_error(Errc::kBadRequest, "a notebook is a JSON object");
  auto major = doc.find("nbformat");
  if (major == doc.end() || !major->is_number_integer() || major->get<int>() != 4) {
    return make_error(Errc::kBadRequest, "only nbformat 4 notebooks are supported");
  }
  auto cells = doc.find("cells");
  if (cells == doc.end() || !cells->is_array()) return make_error(Errc::kBadRequest, "\"cells\" must be an array");
  for (std::size_t i = 0; i < cells->size(); ++i) {
    const auto& cell = (*cells)[i];
    if (!cell.is_object()) return make_error(Errc::kBadRequest, fmt::format("cell {} is not an object", i + 1));
    auto type = cell.find("cell_type");
    if (type == cell.end() || !type->is_string() ||
        (*type != "code" && *type != "markdown" && *type != "raw")) {
      return make_error(Errc::kBadRequest, fmt::format("cell {} has no valid cell_type", i + 1));
    }
    auto src = cell.find("source");
    if (src == cell.end() || !valid_source(*src)) {
      return make_error(Errc::kBadRequest, fmt::format("cell {} has no valid source", i + 1));
    }
  }
  if (!doc.contains("metadata") || !doc["metadata"].is_object()) doc["metadata"] = nlohmann::json::object();
  return Notebook{std::move(doc)};
}

common::Result<Notebook> load_notebook(const std::string& path) {
  common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return make_error(Errc::kNotFound, fmt::format("{}: {}", path, std::strerror(errno)), errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return make_error(Errc::kBadRequest, fmt::format("{}: not a regular file", path));
  }
  if (static_cast<std::size_t>(st.st_size) > kMaxNotebookBytes) {
    return make_error(Errc::kTooLarge, fmt::format("{}: larger than {} bytes", path, kMaxNotebookBytes));
  }
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  auto nb = parse_notebook(text);
  if (!nb) return make_error(nb.error().code, fmt::format("{}: {}", path, nb.error().message));
  return nb;
}

common::Status save_notebook(const Notebook& nb, const std::string& path) {
  std::string text = nb.doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::string tmp = fmt::format("{}.tmp-{}", path, ::getpid());
  common::UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) return make_error(Errc::kInternal, fmt::format("{}: {}", tmp, std::strerror(errno)), errno);
  const bool wrote = common::write_all(fd.get(), text) == 0;
  if (!wrote || ::fsync(fd.get()) != 0) {
    ::unlink(tmp.c_str());
    return make_error(Errc::kInternal, fmt::format("{}: write failed", tmp));
  }
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return make_error(Errc::kInternal, fmt::format("{}: {}", path, std::strerror(err)), err);
  }
  return common::ok();
}

}  // namespace cellgate::launcher
