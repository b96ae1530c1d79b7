#include "serve/server.h"

#include <pthread.h>
#include <signal.h>

#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <thread>

namespace rnnc::serve {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// SIGTERM and SIGINT, blocked in every thread (threads inherit the mask of the one that starts
// them) and taken by one thread with sigwait, so no handler runs in signal context.
class StopSignal {
 public:
  StopSignal() {
    sigemptyset(&signals_);
    sigaddset(&signals_, SIGTERM);
    sigaddset(&signals_, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
    waiter_ = std::thread([this] {
      int signal = 0;
      sigwait(&signals_, &signal);
      std::lock_guard<std::mutex> lock(mutex_);
      received_ = signal;
      changed_.notify_all();
    });
  }
  ~StopSignal() {
    if (waiter_.joinable()) {
      // Wakes the waiter if no signal came (start-up failed): a SIGTERM of our own.
      if (!received()) pthread_kill(waiter_.native_handle(), SIGTERM);
      waiter_.join();
    }
    // The signals stay blocked: the process is ending, and a second SIGTERM sent while it
    // drained must not kill it on the way out.
  }
  int wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return received_ != 0; });
    return received_;
  }
  bool received() {
    std::lock_guard<std::mutex> lock(mutex_);
    return received_ != 0;
  }

 private:
  sigset_t signals_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int received_ = 0;
  std::thread waiter_;
};

std::string address(const std::string& host, int port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

}  // namespace

int run_server(const ServerOptions& options, std::chrono::steady_clock::time_point process_start) {
  if (options.warm_only) {
    InferenceService service(options.models, options.service);
    service.load_models(options.target, options.cache_dir);
    for (const auto& model : service.models()) {
      std::cout << "rnnc serve: warmed '" << model->name() << "' in " << model->load_seconds()
                << " s"
                << (model->warmed_up()
                        ? ""
                        : " (compiled; no warm-up run: give dim= for its symbolic dims)")
                << "\n";
    }
    std::cout << "rnnc serve: kernel cache warm in " << seconds_since(process_start) << " s\n";
    return 0;
  }

  StopSignal stop;
  InferenceService service(options.models, options.service);
  GrpcServer grpc(service, options.grpc);
  HttpServer http(service, options.http);
  const std::string ports = "grpc=" + address(options.grpc.host, grpc.port()) +
                            " http=" + address(options.http.host, http.port());
  std::cout << "rnnc serve: listening " << ports << " (live; compiling models)" << std::endl;
  service.load_models(options.target, options.cache_dir);
  grpc.set_serving(true);
  std::cout << "rnnc serve: ready " << ports << " in " << seconds_since(process_start) << " s"
            << std::endl;

  const int signal = stop.wait();
  std::cout << "rnnc serve: " << (signal == SIGTERM ? "SIGTERM" : "SIGINT") << ": draining (up to "
            << options.drain_timeout.count() << " ms)" << std::endl;
  const auto deadline = std::chrono::system_clock::now() + options.drain_timeout;
  service.stop_accepting();
  grpc.set_serving(false);
  // Requests in flight are answered while every connection is still open. Closing a connection
  // whose peer has sent bytes the server has not read (a flow-control update for a large answer)
  // resets it, and the reset throws away what the peer has not received yet. gRPC closes a
  // connection as soon as its last call ends after a shutdown, so the shutdown starts only when
  // no call is waiting for its answer.
  service.wait_until_answered(std::chrono::steady_clock::now() + options.drain_timeout);
  http.shutdown();
  grpc.shutdown(deadline);
  service.drain();
  std::cout << "rnnc serve: stopped" << std::endl;
  return 0;
}

}  // namespace rnnc::serve
