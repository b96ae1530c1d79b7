#include "lowering/halide_cache.h"

#include <Halide.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <llvm-c/Core.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "generator_identity.h"
#include "ir/error.h"
#include "lowering/cache_location.h"
#include "lowering/env_size.h"

namespace rnnc {

namespace fs = std::filesystem;

namespace {

// Whether `dir` is a directory of this user's that no one else may write to: kernels are
// dlopen'ed from the cache, so a directory another user can write to would let them run code in
// this process.
bool owned_private_directory(const std::string& dir) {
  struct stat info;
  return ::stat(dir.c_str(), &info) == 0 && S_ISDIR(info.st_mode) && info.st_uid == ::geteuid() &&
         (info.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

// The cache of a user without a usable home directory (a service account: HOME unset, or
// /nonexistent): $TMPDIR/rnnc-cache-<uid>, created private to the user.
std::string temporary_directory() {
  const std::string dir =
      (fs::temp_directory_path() / cat("rnnc-cache-", ::geteuid())).string();
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    raise(ErrorKind::kIo, cat("cannot create cache directory '", dir, "': ", std::strerror(errno),
                              " (set RNNC_CACHE_DIR)"));
  }
  if (!owned_private_directory(dir)) {
    raise(ErrorKind::kIo, cat("cache directory '", dir, "' belongs to another user or others may "
                              "write to it; set RNNC_CACHE_DIR to a directory of your own"));
  }
  return dir;
}

// In order: $RNNC_CACHE_DIR; $CACHE_DIRECTORY, which systemd sets for a service with
// CacheDirectory=rnnc (/var/cache/rnnc); $XDG_CACHE_HOME/rnnc; ~/.cache/rnnc when the home
// directory exists; else a private directory in $TMPDIR (lost at reboot: kernels recompile).
std::string default_directory() {
  if (const char* dir = std::getenv("RNNC_CACHE_DIR"); dir && *dir) return dir;
  if (const char* systemd = std::getenv("CACHE_DIRECTORY"); systemd && *systemd) {
    const std::string dirs = systemd;  // colon-separated when the unit names several
    return dirs.substr(0, dirs.find(':'));
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/rnnc";
  if (const char* home = std::getenv("HOME"); home && *home) {
    std::error_code error;
    if (fs::is_directory(home, error)) return std::string(home) + "/.cache/rnnc";
  }
  return temporary_directory();
}

std::string unique_suffix() {
  std::random_device random;
  return cat(::getpid(), "-", random());
}

void run_linker(const std::string& object, const std::string& shared_object) {
  // The system C compiler links; Halide 14 has no linker of its own.
  std::string command = cat(RNNC_HOST_CC, " -shared -o '", shared_object, "' '", object,
                            "' 2>&1");
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) raise(ErrorKind::kIo, cat("cannot run the linker: ", command));
  std::string output;
  char buffer[512];
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), pipe)) output.append(buffer, n);
  int status = ::pclose(pipe);
  if (status != 0) {
    raise(ErrorKind::kIo, cat("linking a compiled kernel failed (", command, "): ", output));
  }
}

// Halide's runtime reports a failed check (a buffer of the wrong size, say) through its error
// handler and, by default, aborts the process. rnnc's handler keeps the message for the failing
// thread; the pipeline then returns a nonzero code, which CompiledPipeline::call raises.
thread_local std::string g_halide_error;

// Halide lowering and code generation run one at a time in the process: Halide 14 does not
// document them as safe to run from two threads at once, and shape specializations compile in
// a background thread while other models may load. Recursive: a CompileFn holds it and calls
// compile_object.
std::recursive_mutex& halide_compile_mutex() {
  static std::recursive_mutex mutex;
  return mutex;
}

extern "C" void rnnc_halide_error_handler(void*, const char* message) {
  g_halide_error = message ? message : "";
}

// Until a runtime installs its own (runtime/halide_tbb.h), parallel loops run in order on the
// calling thread: Halide's own thread pool never starts in an rnnc process.
int serial_do_par_for(void* user_context, halide_task_t task, int min, int size, uint8_t* closure) {
  for (int i = min; i < min + size; ++i) {
    if (int code = task(user_context, i, closure)) return code;
  }
  return 0;
}

std::shared_ptr<void> open_library(const std::string& path, int flags) {
  void* handle = ::dlopen(path.c_str(), flags);
  if (!handle) raise(ErrorKind::kIo, cat("cannot load compiled kernel '", path, "': ", ::dlerror()));
  return std::shared_ptr<void>(handle, [](void* h) { ::dlclose(h); });
}

// Where this process writes kernels when the cache directory cannot be written (a read-only
// image layer, a shared cache another user fills): a directory of its own in $TMPDIR, mode
// 0700, removed at exit. Kernels the cache directory holds still load from there.
class ProcessKernelDirectory {
 public:
  // The directory, created on the first call.
  std::string create() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (path_.empty()) {
      std::string pattern = (fs::temp_directory_path() / "rnnc-kernels-XXXXXX").string();
      if (!::mkdtemp(pattern.data())) {
        raise(ErrorKind::kIo, cat("the kernel cache directory cannot be written and neither can '",
                                  pattern, "': ", std::strerror(errno), " (set RNNC_CACHE_DIR)"));
      }
      path_ = pattern;
    }
    return path_;
  }
  // The directory, or "" before create().
  std::string existing() {
    std::lock_guard<std::mutex> lock(mutex_);
    return path_;
  }
  ~ProcessKernelDirectory() {
    std::error_code ignored;  // loaded kernels stay mapped after their files are removed
    if (!path_.empty()) fs::remove_all(path_, ignored);
  }

 private:
  std::mutex mutex_;
  std::string path_;
};

ProcessKernelDirectory& process_kernel_directory() {
  static ProcessKernelDirectory directory;
  return directory;
}

// Marks a cached file as just used, for trim_kernel_cache's order. A directory this process may not
// write to keeps the old time: harmless, it is not trimmed by this process either.
void mark_used(const std::string& path) { ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0); }

// The kernels in `dir` (rnnc_*, halide_runtime_*: each a shared object and maybe an object file),
// by file name without its extension.
struct CachedKernel {
  int64_t used = 0;  // the latest modification time of its files, in seconds
  uint64_t bytes = 0;
  std::vector<std::string> files;
};

// Scans `dir`, first removing the temporary files of compiles that never finished (a process
// killed while it compiled): tmp-* files older than an hour (`all_temporary`: every one). A
// compile takes seconds, so a live one's files are never that old.
std::map<std::string, CachedKernel> scan_kernels(const std::string& dir, bool all_temporary) {
  std::map<std::string, CachedKernel> kernels;
  const int64_t abandoned = ::time(nullptr) - 3600;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    const std::string path = it->path().string();
    struct stat info;
    if (::stat(path.c_str(), &info) != 0) continue;  // another process removed it first
    if (name.rfind("tmp-", 0) == 0) {
      if (all_temporary || info.st_mtime < abandoned) ::unlink(path.c_str());
      continue;
    }
    if (name.rfind("rnnc_", 0) != 0 && name.rfind("halide_runtime_", 0) != 0) continue;
    CachedKernel& kernel = kernels[name.substr(0, name.rfind('.'))];
    kernel.used = std::max<int64_t>(kernel.used, info.st_mtime);
    kernel.bytes += static_cast<uint64_t>(info.st_size);
    kernel.files.push_back(path);
  }
  if (error)
    raise(ErrorKind::kIo, cat("cannot read the kernel cache '", dir, "': ", error.message()));
  return kernels;
}

KernelCacheUsage usage_of(const std::map<std::string, CachedKernel>& kernels) {
  KernelCacheUsage usage;
  for (const auto& [stem, kernel] : kernels) {
    ++usage.kernels;
    usage.files += static_cast<int64_t>(kernel.files.size());
    usage.bytes += kernel.bytes;
  }
  return usage;
}

// Tidies `dir` before this process writes to it (trim_kernel_cache), at most once in ten minutes
// per directory, whichever process comes: the scan stats every file of a directory that may hold
// tens of thousands (docs/measurements.md, "Kernel cache scan").
void tidy(const std::string& dir, uint64_t max_bytes) {
  const std::string stamp = dir + "/.tidied";
  struct stat info;
  if (::stat(stamp.c_str(), &info) == 0 && info.st_mtime > ::time(nullptr) - 600) return;
  std::ofstream{stamp};
  mark_used(stamp);
  try {
    trim_kernel_cache(dir, max_bytes);
  } catch (const Error&) {
    // A directory that cannot be listed is not tidied; the compile that follows reports what
    // is wrong with it.
  }
}

// RNNC_CACHE_MAX_MIB: the kernel cache's bound in MiB (0: none); 2048 when unset.
uint64_t cache_bound_bytes() {
  return env_size_bytes("RNNC_CACHE_MAX_MIB", "MiB", "no bound", uint64_t{2048} << 20);
}

}  // namespace

uint64_t kernel_cache_bound() { return cache_bound_bytes(); }

KernelCacheUsage kernel_cache_usage(const std::string& dir) {
  return usage_of(scan_kernels(dir, /*all_temporary=*/false));
}

KernelCacheUsage trim_kernel_cache(const std::string& dir, uint64_t max_bytes) {
  std::map<std::string, CachedKernel> kernels = scan_kernels(dir, /*all_temporary=*/false);
  KernelCacheUsage usage = usage_of(kernels);
  if (max_bytes == 0 || usage.bytes <= max_bytes) return usage;
  std::vector<const CachedKernel*> by_use;
  for (const auto& [stem, kernel] : kernels) by_use.push_back(&kernel);
  std::sort(by_use.begin(), by_use.end(),
            [](const CachedKernel* a, const CachedKernel* b) { return a->used < b->used; });
  const int64_t recent = ::time(nullptr) - 3600;
  for (const CachedKernel* kernel : by_use) {
    if (usage.bytes <= max_bytes / 5 * 4 || kernel->used >= recent) break;
    for (const std::string& file : kernel->files) ::unlink(file.c_str());
    --usage.kernels;
    usage.files -= static_cast<int64_t>(kernel->files.size());
    usage.bytes -= kernel->bytes;
  }
  return usage;
}

KernelCacheUsage clear_kernel_cache(const std::string& dir) {
  std::map<std::string, CachedKernel> kernels = scan_kernels(dir, /*all_temporary=*/true);
  for (const auto& [stem, kernel] : kernels) {
    for (const std::string& file : kernel.files) ::unlink(file.c_str());
  }
  return usage_of(kernels);
}

std::string kernel_cache_directory(const std::string& dir) {
  return dir.empty() ? default_directory() : dir;
}

namespace {

// The shared library or executable holding `symbol`: its path, size and modification time.
std::string library_identity(void* symbol) {
  Dl_info info;
  struct stat status;
  if (::dladdr(symbol, &info) && info.dli_fname && ::stat(info.dli_fname, &status) == 0) {
    return cat(info.dli_fname, " ", status.st_size, " ", status.st_mtime);
  }
  return "unknown";
}

}  // namespace

// The hash of the generator's sources (lowering/generator_identity.cmake) and the Halide and LLVM
// libraries that compile what it generates: every binary built from the same sources (the rnnc
// command, librnnc, the tests) shares cached kernels, and a change to the sources or an upgrade of
// Halide or LLVM leaves the earlier ones unused.
const std::string& build_identity() {
  static const std::string identity =
      cat("rnnc generator ", RNNC_GENERATOR_SOURCES_SHA256, "; Halide ",
          library_identity(reinterpret_cast<void*>(&Halide::get_host_target)), "; LLVM ",
          library_identity(reinterpret_cast<void*>(&LLVMContextCreate)));
  return identity;
}

namespace {

constexpr uint64_t kFnvOffset = 1469598103934665603ull;

uint64_t fnv1a(uint64_t hash, const unsigned char* data, size_t size) {
  for (size_t i = 0; i < size; ++i) {
    hash ^= data[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

std::string hex(uint64_t hash) {
  char out[17];
  std::snprintf(out, sizeof(out), "%016llx", static_cast<unsigned long long>(hash));
  return out;
}

}  // namespace

std::string hash_hex(const std::string& text) { return hash_hex(text.data(), text.size()); }

std::string hash_hex(const void* data, size_t size) {
  return hex(fnv1a(kFnvOffset, static_cast<const unsigned char*>(data), size));
}

std::string hash_hex_of_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) raise(ErrorKind::kIo, cat("cannot read '", path, "'"));
  uint64_t hash = kFnvOffset;
  std::vector<char> chunk(size_t{1} << 20);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    hash = fnv1a(hash, reinterpret_cast<const unsigned char*>(chunk.data()),
                 static_cast<size_t>(in.gcount()));
  }
  return hex(hash);
}

void CompiledPipeline::call(void** args) const {
  g_halide_error.clear();
  int status = argv_entry(args);
  if (status != 0) raise_error(status);
}

void CompiledPipeline::raise_error(int status) const {
  std::string message = g_halide_error;
  g_halide_error.clear();
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  raise(ErrorKind::kInternal,
        cat("Halide pipeline ", function_name, " failed (error ", status, "): ", message));
}

HalideCache::HalideCache(std::string dir, std::string target)
    : dir_(kernel_cache_directory(dir)),
      target_(resolve_kernel_target(target)) {
  if (const char* asserts = std::getenv("RNNC_KERNEL_ASSERTS"); asserts && *asserts) {
    kernel_asserts_ = std::string(asserts) != "0";
  }
  max_bytes_ = cache_bound_bytes();
  std::error_code error;
  fs::create_directories(dir_, error);
  if (error) raise(ErrorKind::kIo, cat("cannot create cache directory '", dir_, "': ", error.message()));
}

std::string HalideCache::write_directory() {
  std::call_once(writable_once_, [this] {
    dir_writable_ = ::access(dir_.c_str(), W_OK) == 0;
    if (dir_writable_) tidy(dir_, max_bytes_);
  });
  return dir_writable_ ? dir_ : process_kernel_directory().create();
}

std::vector<std::string> HalideCache::search_directories() const {
  std::vector<std::string> dirs{dir_};
  if (std::string own = process_kernel_directory().existing(); !own.empty()) dirs.push_back(own);
  return dirs;
}

std::string HalideCache::find_file(const std::string& file) const {
  for (const std::string& dir : search_directories()) {
    std::error_code unreadable;  // a directory this process may not search holds nothing for it
    if (std::string path = cat(dir, "/", file); fs::exists(path, unreadable)) return path;
  }
  return "";
}

bool HalideCache::open_cached(const std::string& file,
                              const std::function<void(const std::string&)>& open) const {
  for (const std::string& dir : search_directories()) {
    const std::string path = cat(dir, "/", file);
    std::error_code unreadable;
    if (!fs::exists(path, unreadable)) continue;
    try {
      open(path);
      mark_used(path);
      return true;
    } catch (const Error& error) {
      // A file that does not load (truncated, from a disk that filled up, damaged) is compiled
      // again and replaced.
      if (error.kind() != ErrorKind::kIo) throw;
    }
  }
  return false;
}

void HalideCache::load_runtime() {
  // One standalone Halide runtime per target, shared by every kernel (RTLD_GLOBAL so the kernels'
  // halide_* references resolve to it).
  const std::string file =
      cat("halide_runtime_", hash_hex(target_.key() + "\n" + build_identity()), ".so");
  using ErrorHandler = void (*)(void*, const char*);
  using SetHandler = ErrorHandler (*)(ErrorHandler);
  SetHandler set_handler = nullptr;
  auto open = [&](const std::string& path) {
    std::shared_ptr<void> runtime = open_library(path, RTLD_NOW | RTLD_GLOBAL);
    set_handler = reinterpret_cast<SetHandler>(::dlsym(runtime.get(), "halide_set_error_handler"));
    if (!set_handler) {
      raise(ErrorKind::kIo, cat("Halide runtime '", path, "' lacks halide_set_error_handler"));
    }
    runtime_ = std::move(runtime);
  };
  if (!open_cached(file, open)) {
    const std::string dir = write_directory();
    const std::string stem = cat(dir, "/tmp-runtime-", unique_suffix());
    compile_runtime_object(stem + ".o", target_);
    run_linker(stem + ".o", stem + ".so");
    fs::rename(stem + ".so", cat(dir, "/", file));
    fs::remove(stem + ".o");
    open(cat(dir, "/", file));
  }
  set_handler(rnnc_halide_error_handler);
  install_do_par_for(reinterpret_cast<void*>(&serial_do_par_for));
}

void HalideCache::install_do_par_for(void* do_par_for) {
  using DoParFor = void* (*)(void*);
  auto set = reinterpret_cast<DoParFor>(::dlsym(runtime_.get(), "halide_set_custom_do_par_for"));
  if (!set) raise(ErrorKind::kIo, "the Halide runtime lacks halide_set_custom_do_par_for");
  set(do_par_for);
}

void HalideCache::set_do_par_for(void* do_par_for) {
  std::call_once(runtime_once_, [this] { load_runtime(); });
  install_do_par_for(do_par_for);
}

CompiledPipeline HalideCache::get(const std::string& key, const CompileFn& compile_fn) {
  std::call_once(runtime_once_, [this] { load_runtime(); });
  // Halide reports a pipeline it cannot compile with its own exceptions; the pipelines are
  // rnnc's, so that is an rnnc bug: an internal error naming the kernel, never an escaping
  // Halide exception (a crash for callers that catch rnnc::Error).
  auto compile = [&](const std::string& object, const std::string& name,
                     const KernelTarget& target) {
    try {
      std::lock_guard<std::recursive_mutex> compiling(halide_compile_mutex());
      compile_fn(object, name, target);
    } catch (const Halide::Error& e) {
      std::error_code ignored;
      fs::remove(object, ignored);
      raise(ErrorKind::kInternal, cat("Halide could not compile the kernel '",
                                      key.substr(0, key.find('\n')), "': ", e.what()));
    }
  };
  const KernelTarget target = kernel_asserts_ ? target_.with_feature(Halide::Target::NoRuntime)
                                              : target_.with_feature(Halide::Target::NoRuntime)
                                                    .with_feature(Halide::Target::NoAsserts)
                                                    .with_feature(Halide::Target::NoBoundsQuery);
  std::string hash = hash_hex(cat(key, "\n", target.key(), "\n", build_identity()));
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = loaded_.find(hash); it != loaded_.end()) {
    CompiledPipeline again = it->second;  // a second user compiles nothing
    again.from_cache = true;
    again.compile_ms = 0;
    return again;
  }

  CompiledPipeline pipeline;
  pipeline.function_name = "rnnc_" + hash;
  const std::string file = pipeline.function_name + ".so";
  auto open = [&](const std::string& path) {
    std::shared_ptr<void> library = open_library(path, RTLD_NOW | RTLD_LOCAL);
    auto argv_entry = reinterpret_cast<int (*)(void**)>(
        ::dlsym(library.get(), (pipeline.function_name + "_argv").c_str()));
    auto metadata = reinterpret_cast<const halide_filter_metadata_t* (*)()>(
        ::dlsym(library.get(), (pipeline.function_name + "_metadata").c_str()));
    if (!argv_entry || !metadata) {
      raise(ErrorKind::kIo, cat("compiled kernel '", path, "' lacks its entry points"));
    }
    pipeline.library = std::move(library);
    pipeline.argv_entry = argv_entry;
    pipeline.metadata = metadata();
  };
  pipeline.from_cache = open_cached(file, open);
  if (!pipeline.from_cache) {
    auto start = std::chrono::steady_clock::now();
    const std::string dir = write_directory();
    const std::string stem = cat(dir, "/tmp-", hash, "-", unique_suffix());
    compile(stem + ".o", pipeline.function_name, target);
    run_linker(stem + ".o", stem + ".so");
    // Atomic: concurrent processes see all or nothing.
    fs::rename(stem + ".so", cat(dir, "/", file));
    if (keep_objects_) {
      fs::rename(stem + ".o", cat(dir, "/", pipeline.function_name, ".o"));
    } else {
      fs::remove(stem + ".o");
    }
    pipeline.compile_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    open(cat(dir, "/", file));
  }
  if (keep_objects_) {
    const std::string object = pipeline.function_name + ".o";
    pipeline.object_path = find_file(object);
    if (pipeline.object_path.empty()) {  // an earlier process left only the shared object
      const std::string dir = write_directory();
      const std::string stem = cat(dir, "/tmp-", hash, "-", unique_suffix());
      compile(stem + ".o", pipeline.function_name, target);
      pipeline.object_path = cat(dir, "/", object);
      fs::rename(stem + ".o", pipeline.object_path);
    }
  }
  loaded_[hash] = pipeline;
  return pipeline;
}

namespace {

// Halide 14 lowers a schedule's prefetch directive to prefetchnta (its runtime's
// _halide_prefetch asks LLVM for locality 0), which keeps a streamed weight panel out of the
// caches it is read from a few microseconds later: slower than no prefetch at all
// (docs/measurements.md, "Schedule tables"). rnnc's kernels prefetch only what they read within
// microseconds, so every prefetch in the generated module is rewritten to locality 3
// (prefetcht0) before code generation.
void prefetch_into_l1(llvm::Module& module) {
  for (llvm::Function& function : module) {
    for (llvm::BasicBlock& block : function) {
      for (llvm::Instruction& instruction : block) {
        auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(&instruction);
        if (!call || call->getIntrinsicID() != llvm::Intrinsic::prefetch) continue;
        // llvm.prefetch(address, rw, locality, cache type)
        call->setArgOperand(2, llvm::ConstantInt::get(call->getArgOperand(2)->getType(), 3));
      }
    }
  }
}

// Halide 14 names the CPU and features LLVM generates code for in two module flags, from its own
// feature flags (halide_mcpu = "sapphirerapids" for avx512_sapphirerapids). Both are replaced by
// LLVM's baseline CPU and the target's explicit feature list, and every function carries them
// (with the target's scheduling model), so no instruction outside target.features is emitted.
void retarget(llvm::Module& module, const KernelTarget& target) {
  llvm::LLVMContext& context = module.getContext();
  const std::string features = target.llvm_features();
  module.setModuleFlag(llvm::Module::Warning, "halide_mcpu", llvm::MDString::get(context, "x86-64"));
  module.setModuleFlag(llvm::Module::Warning, "halide_mattrs",
                       llvm::MDString::get(context, features));
  for (llvm::Function& function : module) {
    if (function.isDeclaration()) continue;
    function.addFnAttr("target-cpu", "x86-64");
    function.addFnAttr("target-features", features);
    function.addFnAttr("tune-cpu", target.tune_cpu);
  }
}

// The pipeline as an LLVM module (Halide's runtime linked in and optimized, as compile_to_object
// would produce it), retargeted, prefetches rewritten.
std::unique_ptr<llvm::Module> lower_to_llvm(const Halide::Module& module, const KernelTarget& target,
                                            llvm::LLVMContext& context) {
  std::unique_ptr<llvm::Module> ir = Halide::compile_module_to_llvm_module(module, context);
  if (!target.halide_cpu) retarget(*ir, target);
  prefetch_into_l1(*ir);
  return ir;
}

}  // namespace

void compile_object(Halide::Pipeline pipeline, const std::string& object_path,
                    const std::vector<Halide::Argument>& arguments,
                    const std::string& function_name, const KernelTarget& target) {
  std::lock_guard<std::recursive_mutex> compiling(halide_compile_mutex());
  const Halide::Module module = pipeline.compile_to_module(arguments, function_name, target.halide);
  {
    llvm::LLVMContext context;
    std::unique_ptr<llvm::Module> ir = lower_to_llvm(module, target, context);
    Halide::compile_llvm_module_to_object(*ir, *Halide::make_raw_fd_ostream(object_path));
  }
  if (const char* dir = std::getenv("RNNC_DUMP_HALIDE"); dir && *dir) {
    const std::string stem = std::string(dir) + "/" + function_name;
    pipeline.compile_to_lowered_stmt(stem + ".stmt", arguments, Halide::StmtOutputFormat::Text,
                                     target.halide);
    llvm::LLVMContext context;
    std::unique_ptr<llvm::Module> ir = lower_to_llvm(module, target, context);
    Halide::compile_llvm_module_to_assembly(*ir, *Halide::make_raw_fd_ostream(stem + ".s"));
  }
}

void compile_runtime_object(const std::string& object_path, const KernelTarget& target) {
  std::lock_guard<std::recursive_mutex> compiling(halide_compile_mutex());
  // What Halide::compile_standalone_runtime compiles (an empty module whose target carries the
  // runtime), through the same retargeting as the kernels.
  const Halide::Module empty(
      "standalone_runtime",
      target.halide.without_feature(Halide::Target::NoRuntime).without_feature(Halide::Target::JIT));
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> ir = lower_to_llvm(empty, target, context);
  Halide::compile_llvm_module_to_object(*ir, *Halide::make_raw_fd_ostream(object_path));
}

}  // namespace rnnc
