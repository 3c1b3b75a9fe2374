// SPDX-License-Identifier: BSD-3-Clause
// run: `cellgate run NOTEBOOK.ipynb` on a gateway of its own, or on a running one.
#include "cli/run.h"

#include <signal.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "common/log.h"
#include "cli/embedded_gateway.h"
#include "common/config_error.h"
#include "common/progress.h"
#include "gateway/config.h"
#include "cli/option_value.h"
#include "client/notebook_runner.h"

namespace cellgate::cli {

namespace {

struct RunArgs {
  std::string notebook;
  std::string output;
  std::string url;
  std::string token;
  std::string data_dir;
  std::string log_level = "warn";
  client::RunOptions options;
  std::vector<std::string> serve_args;  // options for the embedded gateway
};

int parse_seconds(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || n < 1 || n > 86400) throw common::ConfigError(flag + ": expected seconds in [1, 86400], got '" + v + "'");
  return static_cast<int>(n);
}

RunArgs parse_args(int argc, char** argv) {
  RunArgs a;
  if (const char* u = std::getenv("CELLGATE_URL")) a.url = u;
  if (const char* t = std::getenv("CELLGATE_TOKEN")) a.token = t;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i], value;
    if (arg == "--help" || arg == "-h") {
      std::fputs(run_help(), stdout);
      std::exit(0);
    }
    if (arg.rfind("--", 0) != 0) {
      if (!a.notebook.empty()) throw common::ConfigError("unexpected argument '" + arg + "' (one notebook per run)");
      a.notebook = arg;
      continue;
    }
    if (arg == "--allow-errors") {
      a.options.allow_errors = true;
      continue;
    }
    value = option_value(arg, argc, argv, i);
    if (arg == "--kernel") a.options.kernel = value;
    else if (arg == "--output") a.output = value;
    else if (arg == "--timeout") a.options.cell_timeout_s = parse_seconds(arg, value);
    else if (arg == "--startup-timeout") a.options.start_timeout_s = parse_seconds(arg, value);
    else if (arg == "--workspace") a.options.workspace = value;
    else if (arg == "--url") a.url = value;
    else if (arg == "--token") a.token = value;
    else if (arg == "--data-dir") a.data_dir = value;
    else if (arg == "--log-level") a.log_level = value;
    else a.serve_args.insert(a.serve_args.end(), {arg, value});
  }
  if (a.notebook.empty()) throw common::ConfigError("no notebook given (usage: cellgate run NOTEBOOK.ipynb [options])");
  if (!a.url.empty() && (!a.serve_args.empty() || !a.data_dir.empty())) {
    throw common::ConfigError("gateway options (" + (a.data_dir.empty() ? a.serve_args[0] : std::string("--data-dir")) +
                      ") apply to the embedded gateway only, not with --url");
  }
  return a;
}

// A private data dir for the embedded gateway when none is given, removed after the run.
struct TempDir {
  std::string path;
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

gateway::Config embedded_config(const RunArgs& a, TempDir& temp) {
  std::vector<std::string> args = a.serve_args;
  args.insert(args.end(), {"--log-level", a.log_level});
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  gateway::Config c = gateway::load_config(static_cast<int>(argv.size()), argv.data());
  // One kernel, started at once: a fork server would still be preloading (seconds of CPU beside the
  // kernel's start) when it starts cold. Only an explicit --fork-server on starts one.
  bool fork_server_flag = false;
  for (const auto& s : a.serve_args) fork_server_flag = fork_server_flag || s.rfind("--fork-server", 0) == 0;
  if (!fork_server_flag) c.fork_server = false;
  if (!a.data_dir.empty()) {
    c.data_dir = std::filesystem::absolute(a.data_dir).lexically_normal().string();
  } else {
    std::string tmpl = (std::filesystem::temp_directory_path() / "cellgate-run-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw common::ConfigError("cannot create a temporary data dir in " + tmpl);
    temp.path = c.data_dir = tmpl;
  }
  return c;
}

}  // namespace

const char* run_help() {
  return "usage: cellgate run NOTEBOOK.ipynb [options]\n\n"
         "Executes the notebook's code cells in order on a new kernel and writes the outputs into it\n"
         "(nbformat 4), like nbclient. Stops at the first failing cell unless --allow-errors (cells\n"
         "tagged raises-exception may fail). Files listed in metadata.cellgate.files (paths relative to\n"
         "the notebook) are uploaded into the kernel's workspace first.\n\n"
         "  --output FILE         write the executed notebook here (default: overwrite NOTEBOOK)\n"
         "  --kernel NAME         kernelspec (default: the notebook's metadata.kernelspec.name)\n"
         "  --allow-errors        record errors and go on\n"
         "  --timeout S           per-cell limit in seconds (default 600); the kernel is interrupted\n"
         "  --startup-timeout S   kernel start limit (default 120)\n"
         "  --workspace W         run on workspace W (default: an ephemeral one, deleted afterwards)\n"
         "  --url URL             a running gateway (env CELLGATE_URL); without it, a gateway is\n"
         "                        embedded for the run on 127.0.0.1 with a random port and token\n"
         "  --token T             its token (env CELLGATE_TOKEN)\n"
         "  --data-dir DIR        embedded gateway's data dir (default: a temporary one, removed)\n"
         "  --log-level L         embedded gateway's log level (default warn)\n"
         "  --<serve option> V    any other `cellgate serve` option, for the embedded gateway\n\n"
         "Exit status: 0 all cells ran; 1 a cell failed or timed out; 2 the run could not start;\n"
         "130 interrupted (SIGINT/SIGTERM: the cell is interrupted and the kernel deleted).\n";
}

namespace {

// "run: cells 2/5 (40%) 12.3s" on a terminal's stderr, and nothing elsewhere. The runner ticks once
// per cell; a cell may run for minutes, so a thread of the meter's own redraws the elapsed time.
class RunMeter {
 public:
  RunMeter() : meter_("run") {
    if (!meter_.enabled()) return;
    thread_ = std::thread([this] {
      std::unique_lock lock(mutex_);
      while (!stop_) {
        if (ticked_) meter_.update({"cells", done_, total_, 0});
        wake_.wait_for(lock, std::chrono::milliseconds(250));
      }
    });
  }
  ~RunMeter() { stop(); }
  RunMeter(const RunMeter&) = delete;
  RunMeter& operator=(const RunMeter&) = delete;

  common::ProgressFn fn() {
    if (!meter_.enabled()) return {};
    return [this](const common::ProgressTick& t) {
      std::lock_guard lock(mutex_);
      ticked_ = true;
      done_ = t.done;
      total_ = t.total;
      wake_.notify_one();
    };
  }
  // Ends the thread; the meter's line is erased when the RunMeter goes.
  void stop() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }

 private:
  common::TerminalProgress meter_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false, ticked_ = false;
  uint64_t done_ = 0, total_ = 0;
  std::thread thread_;
};

int run(int argc, char** argv) {
  RunArgs args = parse_args(argc, argv);
  auto nb = launcher::load_notebook(args.notebook);
  if (!nb) {
    std::fprintf(stderr, "cellgate run: %s\n", nb.error().message.c_str());
    return 2;
  }
  args.options.notebook_dir = std::filesystem::absolute(args.notebook).parent_path().string();
  const std::string output = args.output.empty() ? args.notebook : args.output;

  TempDir temp;
  std::optional<EmbeddedGateway> embedded;
  std::string url = args.url, token = args.token;
  if (url.empty()) {
    gateway::Config config = embedded_config(args, temp);
    common::LogLevel level;
    common::parse_log_level(config.log_level, level);
    common::set_log_level(level);
    ::signal(SIGPIPE, SIG_IGN);
    embedded.emplace(std::move(config));
    url = embedded->url();
    token = embedded->token();
  }
  auto base = client::parse_base_url(url);
  if (!base) {
    std::fprintf(stderr, "cellgate run: %s\n", base.error().message.c_str());
    return 2;
  }
  if (embedded) args.options.cancelled = [gw = &*embedded] { return gw->interrupted(); };
  std::optional<RunMeter> meter(std::in_place);
  args.options.progress = meter->fn();
  auto report = client::run_notebook(*nb, *base, token, args.options);
  meter.reset();  // the line is erased before anything final is printed
  const bool interrupted = embedded && embedded->interrupted();
  embedded.reset();  // stop the gateway, and its kernels, before saying anything final
  if (interrupted) {
    std::fprintf(stderr, "cellgate run: %s: interrupted; the kernel was shut down\n", args.notebook.c_str());
    return 130;
  }
  if (!report) {
    std::fprintf(stderr, "cellgate run: %s: %s\n", args.notebook.c_str(), report.error().message.c_str());
    return 2;
  }
  if (auto saved = launcher::save_notebook(*nb, output); !saved) {
    std::fprintf(stderr, "cellgate run: cannot write %s: %s\n", output.c_str(), saved.error().message.c_str());
    return 2;
  }
  if (!report->ok) {
    std::fprintf(stderr, "cellgate run: %s: %s\n", args.notebook.c_str(), report->failure.c_str());
    return 1;
  }
  std::fprintf(stderr, "cellgate run: %s: %d cells ran on %s; wrote %s\n", args.notebook.c_str(), report->cells_run,
               report->kernel_name.c_str(), output.c_str());
  return 0;
}

}  // namespace

int run_main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const nlohmann::json::exception& e) {  // a gateway answering JSON of the wrong shape
    std::fprintf(stderr, "cellgate run: unexpected message from the gateway: %s\n", e.what());
    return 2;
  }
}

}  // namespace cellgate::cli
