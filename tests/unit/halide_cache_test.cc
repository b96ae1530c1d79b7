// The AOT kernel cache: a pipeline compiles once, loads from disk afterwards, runs, and works for
// both the host target and the generic AVX2 target.
#include "lowering/halide_cache.h"

#include <Halide.h>
#include <HalideBuffer.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ir/error.h"
#include "tests/support/temp_dir.h"

namespace rnnc {
namespace {

// out(x) = in(x) * factor, with factor baked in at compile time.
HalideCache::CompileFn scale_by(float factor) {
  return [factor](const std::string& object, const std::string& name, const KernelTarget& target) {
    Halide::ImageParam in(Halide::Float(32), 1, "in");
    Halide::Var x("x");
    Halide::Func out("out");
    out(x) = in(x) * factor;
    out.vectorize(x, 8, Halide::TailStrategy::GuardWithIf);
    compile_object(out, object, {in}, name, target);
  };
}

// Compiles through `cache` with scale_by(factor), counting the compiles in `compiles`.
CompiledPipeline get_counted(HalideCache& cache, const std::string& key, float factor,
                             int& compiles) {
  return cache.get(key, [&](const std::string& o, const std::string& n, const KernelTarget& t) {
    ++compiles;
    scale_by(factor)(o, n, t);
  });
}

// The files of `dir` whose names start with `prefix`.
std::vector<std::string> files_starting(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind(prefix, 0) == 0) found.push_back(entry.path());
  }
  return found;
}

std::vector<float> run_scale(const CompiledPipeline& pipeline, std::vector<float> values) {
  Halide::Runtime::Buffer<float> in(values.data(), static_cast<int>(values.size()));
  Halide::Runtime::Buffer<float> out(static_cast<int>(values.size()));
  void* args[] = {in.raw_buffer(), out.raw_buffer()};
  pipeline.call(args);
  return std::vector<float>(out.begin(), out.end());
}

TEST(HalideCache, CompilesOnceThenLoadsFromDisk) {
  testing::TempDir dir("rnnc_cache_test", /*create=*/false);
  {
    HalideCache cache(dir.path());
    CompiledPipeline first = cache.get("scale by 3", scale_by(3.0f));
    EXPECT_FALSE(first.from_cache);
    EXPECT_GT(first.compile_ms, 0);
    EXPECT_EQ(run_scale(first, {1, 2, 3}), (std::vector<float>{3, 6, 9}));
  }
  HalideCache fresh(dir.path());  // a new process would see the same directory
  bool compiled = false;
  CompiledPipeline again = fresh.get("scale by 3", [&](const std::string& o, const std::string& n,
                                                       const KernelTarget& t) {
    compiled = true;
    scale_by(3.0f)(o, n, t);
  });
  EXPECT_FALSE(compiled);
  EXPECT_TRUE(again.from_cache);
  EXPECT_EQ(run_scale(again, {5, 0.5f, -1, 2, 2, 2, 2, 2, 2}),
            (std::vector<float>{15, 1.5f, -3, 6, 6, 6, 6, 6, 6}));
}

TEST(HalideCache, DifferentKeysAreDifferentKernels) {
  testing::TempDir dir("rnnc_cache_test", /*create=*/false);
  HalideCache cache(dir.path());
  EXPECT_EQ(run_scale(cache.get("scale by 2", scale_by(2.0f)), {1}), std::vector<float>{2});
  EXPECT_EQ(run_scale(cache.get("scale by 5", scale_by(5.0f)), {1}), std::vector<float>{5});
}

// Kernels ship without Halide's buffer checks; set_kernel_asserts compiles them in, as a kernel
// of its own: a buffer smaller than the kernel's output is then an internal error naming the
// kernel and Halide's message (the unchecked kernel would write past it).
TEST(HalideCache, KernelAssertsAreAVariantOfTheirOwnThatChecksBuffers) {
  testing::TempDir dir("rnnc_cache_test", /*create=*/false);
  HalideCache shipped(dir.path()), checked(dir.path());
  shipped.set_kernel_asserts(false);
  checked.set_kernel_asserts(true);
  const CompiledPipeline fast = shipped.get("scale by 3", scale_by(3.0f));
  const CompiledPipeline safe = checked.get("scale by 3", scale_by(3.0f));
  EXPECT_NE(fast.function_name, safe.function_name);
  EXPECT_EQ(run_scale(fast, {1, 2}), (std::vector<float>{3, 6}));
  EXPECT_EQ(run_scale(safe, {1, 2}), (std::vector<float>{3, 6}));
  // The input holds 2 floats, the output asks for 4: the checked kernel refuses the call.
  std::vector<float> values = {1, 2};
  Halide::Runtime::Buffer<float> in(values.data(), 2);
  Halide::Runtime::Buffer<float> out(4);
  void* args[] = {in.raw_buffer(), out.raw_buffer()};
  try {
    safe.call(args);
    ADD_FAILURE() << "the checked kernel read past its input";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInternal);
    EXPECT_THAT(e.what(), ::testing::HasSubstr(safe.function_name));
  }
}

TEST(HalideCache, GenericAvx2TargetCompilesAndRuns) {
  testing::TempDir dir("rnnc_cache_test", /*create=*/false);
  HalideCache cache(dir.path(), "avx2");
  EXPECT_FALSE(cache.target().has_feature(Halide::Target::AVX512));
  EXPECT_TRUE(cache.target().has_feature(Halide::Target::AVX2));
  EXPECT_EQ(run_scale(cache.get("scale by 4", scale_by(4.0f)), {1, 2}), (std::vector<float>{4, 8}));
}

// A pipeline Halide rejects (here: it reads an image parameter its argument list lacks) is an
// internal rnnc error naming the kernel, not a Halide exception escaping to the caller.
TEST(HalideCache, HalideCompileErrorsBecomeInternalErrorsNamingTheKernel) {
  testing::TempDir dir("rnnc_cache_test", /*create=*/false);
  HalideCache cache(dir.path());
  try {
    cache.get("broken kernel", [](const std::string& object, const std::string& name,
                                  const KernelTarget& target) {
      Halide::ImageParam in(Halide::Float(32), 1, "in");
      Halide::Var x("x");
      Halide::Func out("out");
      out(x) = in(x) * 2.0f;
      out.compile_to_object(object, {}, name, target.halide);  // `in` missing from the arguments
    });
    ADD_FAILURE() << "compiled a broken pipeline";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInternal);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("Halide could not compile the kernel 'broken kernel'"));
  }
  // The cache still works afterwards.
  EXPECT_EQ(run_scale(cache.get("scale by 2", scale_by(2.0f)), {1}), std::vector<float>{2});
}

TEST(HalideCache, BadTargetNamesTheProblem) {
  try {
    HalideCache cache("", "riscv-banana");
    ADD_FAILURE() << "accepted a bad target";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_THAT(e.what(),
                ::testing::HasSubstr(
                    "unknown target 'riscv-banana' (use host, x86-64, x86-64-v2, x86-64-v3"));
  }
}

// A cache directory shared by hosts of different features (an NFS home, an image layer) never
// serves one target's kernel to another: the key holds the exact feature list.
TEST(HalideCache, TargetsWithDifferentFeaturesNeverShareKernels) {
  testing::TempDir dir("rnnc_cache_test", /*create=*/false);
  HalideCache v3(dir.path(), "x86-64-v3");
  EXPECT_FALSE(v3.get("scale by 2", scale_by(2.0f)).from_cache);
  HalideCache v4(dir.path(), "x86-64-v4");
  EXPECT_NE(v3.kernel_target().key(), v4.kernel_target().key());
  EXPECT_FALSE(v4.get("scale by 2", scale_by(2.0f)).from_cache);
  HalideCache v3_again(dir.path(), "avx2");  // an alias: the same target, the same kernel
  EXPECT_TRUE(v3_again.get("scale by 2", scale_by(2.0f)).from_cache);
}

// A cached kernel that no longer loads (a disk that filled up, a damaged copy of a cache
// directory) is compiled again and replaced, not an error that stops every load of the model.
TEST(HalideCache, ACachedKernelThatDoesNotLoadIsCompiledAgain) {
  testing::TempDir dir("rnnc_cache_test", /*create=*/false);
  int compiles = 0;
  {
    HalideCache cache(dir.path());
    EXPECT_EQ(run_scale(get_counted(cache, "scale by 3", 3.0f, compiles), {1}),
              std::vector<float>{3});
  }  // unloaded: a later dlopen reads the file again
  const std::vector<std::string> kernels = files_starting(dir.path(), "rnnc_");
  ASSERT_EQ(kernels.size(), 1u);
  std::filesystem::resize_file(kernels[0], 100);
  {
    HalideCache cache(dir.path());
    const CompiledPipeline again = get_counted(cache, "scale by 3", 3.0f, compiles);
    EXPECT_EQ(compiles, 2);
    EXPECT_FALSE(again.from_cache);
    EXPECT_EQ(run_scale(again, {1, 2}), (std::vector<float>{3, 6}));
  }
  HalideCache cache(dir.path());  // the replaced file loads
  EXPECT_TRUE(get_counted(cache, "scale by 3", 3.0f, compiles).from_cache);
  EXPECT_EQ(compiles, 2);
}

TEST(HalideCache, ACachedRuntimeThatDoesNotLoadIsCompiledAgain) {
  testing::TempDir dir("rnnc_cache_test", /*create=*/false);
  int compiles = 0;
  {
    HalideCache cache(dir.path());
    get_counted(cache, "scale by 3", 3.0f, compiles);
  }
  const std::vector<std::string> runtimes = files_starting(dir.path(), "halide_runtime_");
  ASSERT_EQ(runtimes.size(), 1u);
  std::ofstream(runtimes[0], std::ios::trunc) << "not a shared object";
  HalideCache cache(dir.path());
  const CompiledPipeline kernel = get_counted(cache, "scale by 3", 3.0f, compiles);
  EXPECT_TRUE(kernel.from_cache);
  EXPECT_EQ(run_scale(kernel, {2}), std::vector<float>{6});
  EXPECT_GT(std::filesystem::file_size(runtimes[0]), 1000u);  // replaced by a new runtime
}

// A compile killed halfway leaves its temporary files; the next compile into the directory
// removes those older than an hour and leaves younger ones (a compile running in another
// process).
TEST(HalideCache, ACompileRemovesAbandonedTemporaryFiles) {
  testing::TempDir dir("rnnc_cache_test");
  const std::string abandoned = dir.path() + "/tmp-0123456789abcdef-999-1.o";
  const std::string running = dir.path() + "/tmp-fedcba9876543210-998-2.o";
  std::ofstream(abandoned) << "half an object";
  std::ofstream(running) << "half an object";
  std::filesystem::last_write_time(
      abandoned, std::filesystem::file_time_type::clock::now() - std::chrono::hours(2));
  HalideCache cache(dir.path());
  int compiles = 0;
  get_counted(cache, "scale by 3", 3.0f, compiles);
  EXPECT_EQ(compiles, 1);
  EXPECT_FALSE(std::filesystem::exists(abandoned));
  EXPECT_TRUE(std::filesystem::exists(running));
}

// A file of `bytes` zero bytes, last modified `age` ago.
void write_aged_file(const std::string& path, size_t bytes, std::chrono::hours age) {
  std::ofstream(path) << std::string(bytes, '\0');
  std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now() - age);
}

// Beyond its bound, the cache removes the least recently used kernels (shared object and object
// file together) until they take at most 80% of it; files that are not kernels stay.
TEST(HalideCache, ABoundedCacheRemovesTheLeastRecentlyUsedKernels) {
  testing::TempDir dir("rnnc_cache_test");
  constexpr size_t kMiB = size_t{1} << 20;
  const std::string oldest = dir.path() + "/rnnc_00000000000000aa";
  const std::string older = dir.path() + "/rnnc_00000000000000bb";
  const std::string newer = dir.path() + "/halide_runtime_00000000000000cc.so";
  const std::string other = dir.path() + "/quantization-decision.txt";
  write_aged_file(oldest + ".so", kMiB, std::chrono::hours(72));
  write_aged_file(oldest + ".o", kMiB / 2, std::chrono::hours(72));
  write_aged_file(older + ".so", kMiB, std::chrono::hours(48));
  write_aged_file(newer, kMiB, std::chrono::hours(24));
  const std::string in_use = dir.path() + "/rnnc_00000000000000dd.so";
  write_aged_file(in_use, 3 * kMiB, std::chrono::hours(0));
  write_aged_file(other, 4 * kMiB, std::chrono::hours(96));
  HalideCache cache(dir.path());
  // Kernels take 6.5 MiB against a bound of 3: the three used a day or more ago go, the one used
  // within the hour stays although it alone exceeds 80% of the bound.
  cache.set_max_bytes(3 * kMiB);
  int compiles = 0;
  EXPECT_EQ(run_scale(get_counted(cache, "scale by 3", 3.0f, compiles), {1}),
            std::vector<float>{3});
  EXPECT_FALSE(std::filesystem::exists(oldest + ".so"));
  EXPECT_FALSE(std::filesystem::exists(oldest + ".o"));
  EXPECT_FALSE(std::filesystem::exists(older + ".so"));
  EXPECT_FALSE(std::filesystem::exists(newer));
  EXPECT_TRUE(std::filesystem::exists(in_use));
  EXPECT_TRUE(std::filesystem::exists(other));
}

// A kernel loaded from the cache counts as just used, so the bound keeps what models load.
TEST(HalideCache, ALoadFromTheCacheMarksTheKernelUsed) {
  testing::TempDir dir("rnnc_cache_test", /*create=*/false);
  int compiles = 0;
  std::string path;
  {
    HalideCache cache(dir.path());
    path =
        dir.path() + "/" + get_counted(cache, "scale by 3", 3.0f, compiles).function_name + ".so";
  }
  const auto now = std::filesystem::file_time_type::clock::now();
  std::filesystem::last_write_time(path, now - std::chrono::hours(120));
  HalideCache cache(dir.path());
  EXPECT_TRUE(get_counted(cache, "scale by 3", 3.0f, compiles).from_cache);
  EXPECT_GT(std::filesystem::last_write_time(path), now - std::chrono::hours(1));
}

TEST(HalideCache, ABoundThatIsNotANumberNamesTheVariable) {
  testing::TempDir dir("rnnc_cache_test", /*create=*/false);
  ASSERT_EQ(::setenv("RNNC_CACHE_MAX_MIB", "2GB", 1), 0);
  try {
    HalideCache cache(dir.path());
    ADD_FAILURE() << "accepted RNNC_CACHE_MAX_MIB=2GB";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_THAT(e.what(),
                ::testing::HasSubstr("RNNC_CACHE_MAX_MIB = '2GB': must be a whole number"));
  }
  ::unsetenv("RNNC_CACHE_MAX_MIB");
}

// A view of a directory this process cannot write to: the directory's write permission removed
// for a user other than root, a read-only bind mount for root (whom permissions do not stop).
// path() is "" when neither can be made here. Undone when the object goes.
class ReadOnlyView {
 public:
  ReadOnlyView(const std::string& dir, const std::string& mount_point) : dir_(dir) {
    if (::geteuid() != 0) {
      if (::chmod(dir.c_str(), 0555) == 0) path_ = dir;
      return;
    }
    std::filesystem::create_directories(mount_point);
    if (::mount(dir.c_str(), mount_point.c_str(), nullptr, MS_BIND, nullptr) != 0) return;
    path_ = mount_point;
    ::mount(nullptr, mount_point.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr);
  }
  ~ReadOnlyView() {
    if (path_ == dir_) {
      ::chmod(dir_.c_str(), 0755);
    } else if (!path_.empty()) {
      ::umount2(path_.c_str(), MNT_DETACH);
    }
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
};

// A cache directory shipped read-only (an image layer filled at build time) serves the kernels it
// holds, and kernels it lacks are compiled into a directory of the process's own.
TEST(HalideCache, AReadOnlyCacheServesWhatItHoldsAndCompilesTheRestElsewhere) {
  testing::TempDir dir("rnnc_cache_test"), mount_point("rnnc_cache_view", /*create=*/false);
  int compiles = 0;
  {
    HalideCache filler(dir.path());
    get_counted(filler, "scale by 3", 3.0f, compiles);
  }
  const ReadOnlyView read_only(dir.path(), mount_point.path());
  const std::string& view = read_only.path();
  if (view.empty()) GTEST_SKIP() << "cannot make a read-only directory here";
  ASSERT_NE(::access(view.c_str(), W_OK), 0);
  {
    HalideCache cache(view);
    const CompiledPipeline held = get_counted(cache, "scale by 3", 3.0f, compiles);
    EXPECT_TRUE(held.from_cache);
    EXPECT_EQ(compiles, 1);
    const CompiledPipeline lacking = get_counted(cache, "scale by 7", 7.0f, compiles);
    EXPECT_FALSE(lacking.from_cache);
    EXPECT_EQ(compiles, 2);
    EXPECT_EQ(run_scale(held, {1}), std::vector<float>{3});
    EXPECT_EQ(run_scale(lacking, {1}), std::vector<float>{7});
    EXPECT_EQ(files_starting(view, "rnnc_").size(), 1u);  // nothing written to the cache
    HalideCache second(view);  // a second model of the process finds the kernel it compiled
    EXPECT_TRUE(get_counted(second, "scale by 7", 7.0f, compiles).from_cache);
  }
}

}  // namespace
}  // namespace rnnc
