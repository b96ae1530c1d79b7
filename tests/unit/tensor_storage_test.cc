// Tensor storage: the huge-page-backed allocation used for large recurrent weight matrices
// (lowering/lower_recurrent.cc recurrent_weight_tensor).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "ir/tensor.h"

namespace rnnc {
namespace {

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;

// AnonHugePages (kB) of the mapping containing `address`, from /proc/self/smaps; -1 if absent.
int64_t anon_huge_kb(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const uintptr_t target = reinterpret_cast<uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2 && line.find(':') > 8) {
      inside = begin <= target && target < end;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      return std::stoll(line.substr(14));
    }
  }
  return -1;
}

std::string read_file(const char* path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(TensorStorage, HugePageBackedIsAlignedZeroedAndWritable) {
  Tensor tensor = Tensor::huge_page_backed(DType::kInt8, {3, 1000, 500});  // 1.5 MB
  const auto* bytes = tensor.data<int8_t>();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(bytes) % kHugePage, 0u);
  for (int64_t i = 0; i < tensor.numel(); ++i) ASSERT_EQ(bytes[i], 0) << i;
  int8_t* out = tensor.data<int8_t>();
  for (int64_t i = 0; i < tensor.numel(); ++i) out[i] = static_cast<int8_t>(i % 127);
  Tensor copy = tensor.clone();
  EXPECT_TRUE(copy.bitwise_equal(tensor));
  EXPECT_EQ(tensor.shape(), (std::vector<int64_t>{3, 1000, 500}));
}

TEST(TensorStorage, HugePageBackedGetsHugePagesWhenTheKernelGrantsThem) {
  const std::string enabled = read_file("/sys/kernel/mm/transparent_hugepage/enabled");
  if (enabled.empty() || enabled.find("[never]") != std::string::npos) {
    GTEST_SKIP() << "transparent huge pages are off on this machine: '" << enabled << "'";
  }
  Tensor tensor = Tensor::huge_page_backed(DType::kFloat32, {512, 1024});  // 2 MiB
  tensor.data<float>()[0] = 1.0f;
  const int64_t kb = anon_huge_kb(tensor.data<float>());
  if (kb == 0 && read_file("/proc/vmstat").find("thp_fault_fallback 0\n") == std::string::npos) {
    GTEST_SKIP() << "the kernel fell back to 4 KiB pages (no free 2 MiB page): THP '" << enabled
                 << "'";
  }
  EXPECT_GE(kb, 2048) << "THP '" << enabled << "'";
}

}  // namespace
}  // namespace rnnc

namespace rnnc {
namespace {

// A constant whose data a compiled block holds keeps its dtype and shape in the graph; reading
// its elements is our bug, reported as an internal error rather than a read through null.
TEST(TensorStorage, WithoutDataKeepsTypeAndShapeAndRefusesTypedAccess) {
  Tensor weights(DType::kFloat32, {2, 3});
  Tensor metadata = weights.without_data();
  EXPECT_TRUE(weights.has_data());
  EXPECT_FALSE(metadata.has_data());
  EXPECT_EQ(metadata.dtype(), DType::kFloat32);
  EXPECT_EQ(metadata.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(metadata.nbytes(), 24u);
  try {
    (void)metadata.data<float>();
    FAIL() << "typed access to a tensor without data";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInternal);
    EXPECT_NE(std::string(e.what()).find("tensor without data"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(Tensor(DType::kFloat32, {0}).without_data().has_data());  // nothing to hold
}

}  // namespace
}  // namespace rnnc
