// The ONNX Runtime engine as seen from the runner: a proxy for the rnnc_conform_ort worker
// process (ort_worker.cc). One worker serves many tests; when it dies (ORT aborts the process on
// some models) or hangs, the test gets kCrash with the signal and the worker's last stderr line,
// and the next test starts a fresh worker.
//
// Protocol, one line each way per test:
//   runner -> worker:  <test dir> TAB <output dir>
//   worker -> runner:  "ok <n>" (outputs in <output dir>/output_<k>.pb), "unsupported <message>"
//                      or "error <message>"
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "ir/error.h"
#include "ir/onnx_import.h"
#include "tests/conformance/engine.h"

namespace fs = std::filesystem;

namespace rnnc::conformance {

namespace {

constexpr int kTimeoutMs = 120 * 1000;

class OrtProcessEngine final : public Engine {
 public:
  OrtProcessEngine(std::string worker, std::string scratch)
      : worker_(std::move(worker)), scratch_(std::move(scratch)) {
    fs::create_directories(scratch_);
    stderr_path_ = (fs::path(scratch_) / "worker_stderr.txt").string();
  }
  ~OrtProcessEngine() override { stop(SIGTERM); }

  std::string name() const override { return "onnxruntime"; }

  EngineResult run(const TestFiles& test) override {
    EngineResult result;
    if (pid_ <= 0) start();
    fs::path out_dir = fs::path(scratch_) / "outputs";
    fs::remove_all(out_dir);
    fs::create_directories(out_dir);
    std::string request = test.dir + "\t" + out_dir.string() + "\n";
    std::string reply;
    if (!write_all(request) || !read_line(&reply)) {
      result.status = EngineResult::Status::kCrash;
      result.message = crash_message();
      return result;
    }
    if (reply.rfind("ok ", 0) == 0) {
      int n = std::stoi(reply.substr(3));
      for (int k = 0; k < n; ++k) {
        result.outputs.push_back(read_tensor_pb((out_dir / cat("output_", k, ".pb")).string()));
      }
    } else if (reply.rfind("unsupported ", 0) == 0) {
      result.status = EngineResult::Status::kUnsupported;
      result.message = reply.substr(12);
    } else {
      result.status = EngineResult::Status::kError;
      result.message = reply.rfind("error ", 0) == 0 ? reply.substr(6) : reply;
    }
    return result;
  }

 private:
  void start() {
    int to_worker[2], from_worker[2];
    RNNC_CHECK(pipe(to_worker) == 0 && pipe(from_worker) == 0, "pipe: ", std::strerror(errno));
    int err = open(stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = fork();
    RNNC_CHECK(pid >= 0, "fork: ", std::strerror(errno));
    if (pid == 0) {
      dup2(to_worker[0], 0);
      dup2(from_worker[1], 1);
      if (err >= 0) dup2(err, 2);
      close(to_worker[1]);
      close(from_worker[0]);
      execl(worker_.c_str(), worker_.c_str(), static_cast<char*>(nullptr));
      std::fprintf(stderr, "cannot run %s: %s\n", worker_.c_str(), std::strerror(errno));
      _exit(127);
    }
    if (err >= 0) close(err);
    close(to_worker[0]);
    close(from_worker[1]);
    pid_ = pid;
    in_ = to_worker[1];
    out_ = from_worker[0];
    buffer_.clear();
  }

  void stop(int signal) {
    if (pid_ <= 0) return;
    close(in_);
    close(out_);
    if (signal) kill(pid_, signal);
    waitpid(pid_, &status_, 0);
    pid_ = -1;
  }

  bool write_all(const std::string& text) {
    // A worker that died between tests gives EPIPE; do not let SIGPIPE end the runner.
    signal(SIGPIPE, SIG_IGN);
    size_t done = 0;
    while (done < text.size()) {
      ssize_t n = write(in_, text.data() + done, text.size() - done);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

  bool read_line(std::string* line) {
    for (;;) {
      size_t newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        *line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return true;
      }
      pollfd fd{out_, POLLIN, 0};
      int ready = poll(&fd, 1, kTimeoutMs);
      if (ready == 0) {
        timed_out_ = true;
        return false;
      }
      char chunk[4096];
      ssize_t n = read(out_, chunk, sizeof(chunk));
      if (n <= 0) return false;
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

  std::string crash_message() {
    bool timed_out = timed_out_;
    timed_out_ = false;
    stop(timed_out ? SIGKILL : 0);
    std::string what;
    if (timed_out) {
      what = cat("worker timed out after ", kTimeoutMs / 1000, " s");
    } else if (WIFSIGNALED(status_)) {
      what = cat("worker died with signal ", WTERMSIG(status_), " (", strsignal(WTERMSIG(status_)),
                 ")");
    } else {
      what = cat("worker exited with status ", WEXITSTATUS(status_));
    }
    std::ifstream err(stderr_path_);
    std::string line, last;
    while (std::getline(err, line)) {
      if (!line.empty()) last = line;
    }
    if (!last.empty()) what += "; its last stderr line: " + last;
    return what;
  }

  std::string worker_;
  std::string scratch_;
  std::string stderr_path_;
  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
  int status_ = 0;
  bool timed_out_ = false;
  std::string buffer_;
};

}  // namespace

std::unique_ptr<Engine> make_ort_engine(const std::string& worker, const std::string& scratch_dir) {
  if (worker.empty()) {
    raise_invalid_input(
        "no ONNX Runtime worker: configure with -DRNNC_ONNXRUNTIME_DIR=$(scripts/"
        "install-onnxruntime.sh --quiet) to build rnnc_conform_ort, or pass --ort-worker PATH");
  }
  if (!fs::exists(worker)) raise_invalid_input(cat("ONNX Runtime worker '", worker, "' not found"));
  return std::make_unique<OrtProcessEngine>(worker, scratch_dir);
}

std::string default_ort_worker() {
#ifdef RNNC_CONFORM_ORT_WORKER
  return RNNC_CONFORM_ORT_WORKER;
#else
  return "";
#endif
}

}  // namespace rnnc::conformance
