// lowering/quantized_operands' quantize_rows, JIT-compiled and vectorized as the kernels use it
// (for the host, 16 lanes where it has AVX-512, and for the AVX2 level, 8 lanes), against
// ir/quantization.h's arithmetic value by value: rounding ties (half to even), values past the
// integer range and infinities (clamped), the zero padding past a row's end, and the dynamic
// coefficients of each row. The kernels round without a rounding instruction (an added
// 1.5 * 2^23), which these cases would catch if it differed anywhere.
#include <Halide.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "lowering/kernel_target.h"
#include "lowering/quantized_operands.h"

namespace rnnc {
namespace {

// The kernels' two vector widths: the host's (16 lanes with AVX-512) and the AVX2 level's.
struct Level {
  const char* name;
  Halide::Target target;
  int vector_width;
};

std::vector<Level> levels() {
  const Halide::Target host = Halide::get_host_target();
  std::vector<Level> out = {{"x86-64-v3", resolve_kernel_target("x86-64-v3").halide, 8}};
  if (host.has_feature(Halide::Target::AVX512)) out.push_back({"host", host, 16});
  return out;
}

struct Quantized {
  std::vector<int32_t> q;  // [rows][padded], row-major
  std::vector<float> scale;
  std::vector<int32_t> zero_point;
  int padded = 0;
};

// Quantizes rows[r] (each n values) with `quant` for `level`, q vectorized by the storage's
// vector.
Quantized quantize(const std::vector<std::vector<float>>& rows, int n, const ActivationQuant& quant,
                   const Level& level) {
  const int row_count = static_cast<int>(rows.size());
  Halide::Buffer<float> in(n, row_count);
  for (int r = 0; r < row_count; ++r) {
    for (int k = 0; k < n; ++k) in(k, r) = rows[static_cast<size_t>(r)][static_cast<size_t>(k)];
  }
  Halide::Var k("k"), row("row");
  Halide::Func src("src");
  src(k, row) = in(k, row);
  const Halide::Type storage = quant.wide() ? Halide::Int(16) : Halide::UInt(8);
  const int padded = n + 5;
  QuantizedRows xq =
      quantize_rows(src, n, padded, quant, /*state=*/false, storage, level.vector_width, "x");
  const int vector = storage_vector(storage, level.vector_width);
  const int extent = (padded + vector - 1) / vector * vector;
  Halide::Func q("q"), coefficients("coefficients");
  q(k, row) = Halide::cast<int32_t>(xq.q(k, row));
  xq.q.compute_at(q, row).vectorize(xq.q.args()[0], vector);
  coefficients(row) = Halide::Tuple(xq.scale(row), xq.zero_point(row));
  Halide::Buffer<int32_t> q_out = q.realize({extent, row_count}, level.target);
  Halide::Realization c = coefficients.realize({row_count}, level.target);
  Halide::Buffer<float> scale_out = c[0];
  Halide::Buffer<int32_t> zero_out = c[1];
  Quantized out;
  out.padded = extent;
  for (int r = 0; r < row_count; ++r) {
    for (int i = 0; i < extent; ++i) out.q.push_back(q_out(i, r));
    out.scale.push_back(scale_out(r));
    out.zero_point.push_back(zero_out(r));
  }
  return out;
}

// Every value against quantize_value with the row's coefficients (the static ones, or
// dynamic_row_quant's, which must equal the kernel's), and 0 past the row.
void expect_level_matches_reference(const std::vector<std::vector<float>>& rows, int n,
                                    const ActivationQuant& quant, const Level& level) {
  const Quantized got = quantize(rows, n, quant, level);
  for (size_t r = 0; r < rows.size(); ++r) {
    const RowQuant want = quant.dynamic
                              ? dynamic_row_quant(rows[r].data(), n, quant)
                              : static_row_quant(quant.input_scale, quant.input_zero_point);
    ASSERT_EQ(got.scale[r], want.scale) << "row " << r;
    ASSERT_EQ(got.zero_point[r], want.zero_point) << "row " << r;
    for (int k = 0; k < got.padded; ++k) {
      const int32_t q = got.q[r * static_cast<size_t>(got.padded) + static_cast<size_t>(k)];
      if (k >= n) {
        ASSERT_EQ(q, 0) << "row " << r << " padding at " << k;
        continue;
      }
      const float x = rows[r][static_cast<size_t>(k)];
      ASSERT_EQ(q, quantize_value(x, want, quant))
          << quant.to_string() << ", row " << r << ", x = " << x
          << " (x / scale = " << x * want.inv_scale << ")";
    }
  }
}

void expect_matches_reference(const std::vector<std::vector<float>>& rows, int n,
                              const ActivationQuant& quant) {
  for (const Level& level : levels()) {
    SCOPED_TRACE(level.name);
    expect_level_matches_reference(rows, n, quant, level);
  }
}

ActivationQuant static_quant(int bits, bool symmetric, float scale, int32_t zero_point) {
  ActivationQuant quant;
  quant.bits = bits;
  quant.symmetric = symmetric;
  quant.dynamic = false;
  quant.input_scale = scale;
  quant.input_zero_point = zero_point;
  return quant;
}

// Values whose x / scale are the ties m + 1/2 from below qmin - zp to past qmax - zp (scale a
// power of two, so x / scale is exact), with the points either side of each tie, huge values and
// infinities, in rows of n.
std::vector<std::vector<float>> edge_rows(const ActivationQuant& quant, int n) {
  const float scale = quant.input_scale;
  const int zp = quant.input_zero_point;
  std::vector<float> values;
  for (int m = quant.qmin() - zp - 3; m <= quant.qmax() - zp + 3; ++m) {
    const float tie = (static_cast<float>(m) + 0.5f) * scale;
    values.insert(values.end(), {tie, std::nextafter(tie, -INFINITY), std::nextafter(tie, INFINITY),
                                 static_cast<float>(m) * scale});
  }
  const float inf = std::numeric_limits<float>::infinity();
  values.insert(values.end(), {1e30f, -1e30f, inf, -inf, 3e9f, -3e9f, 5e6f * scale, -5e6f * scale,
                               0.0f, -0.0f, std::numeric_limits<float>::denorm_min()});
  std::vector<std::vector<float>> rows;
  for (size_t at = 0; at < values.size(); at += static_cast<size_t>(n)) {
    std::vector<float> row(static_cast<size_t>(n), 0.0f);
    for (size_t i = 0; i < row.size() && at + i < values.size(); ++i) row[i] = values[at + i];
    rows.push_back(row);
  }
  return rows;
}

TEST(QuantizeRows, StaticUnsignedRoundsTiesToEvenAndClamps) {
  const ActivationQuant quant = static_quant(8, false, 0.25f, 100);
  expect_matches_reference(edge_rows(quant, 37), 37, quant);
}

TEST(QuantizeRows, StaticSymmetricAndFourBit) {
  for (const ActivationQuant& quant :
       {static_quant(8, true, 0.0625f, 128), static_quant(4, false, 0.5f, 3),
        static_quant(8, false, 1.0f, 0), static_quant(8, false, 2.0f, 255)}) {
    SCOPED_TRACE(quant.to_string());
    expect_matches_reference(edge_rows(quant, 21), 21, quant);
  }
}

TEST(QuantizeRows, StaticSixteenBit) {
  for (const ActivationQuant& quant :
       {static_quant(16, true, 0.001953125f, 0), static_quant(12, true, 0.5f, 0)}) {
    SCOPED_TRACE(quant.to_string());
    expect_matches_reference(edge_rows(quant, 64), 64, quant);
  }
}

// Dynamic rows: random, all zeros, all of one sign, a single nonzero value, a tiny range.
TEST(QuantizeRows, DynamicRowsAsymmetricAndSymmetric) {
  const int n = 45;
  std::vector<std::vector<float>> rows;
  uint32_t state = 12345;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / static_cast<float>(1 << 24) * 2.0f - 1.0f;
  };
  for (int r = 0; r < 6; ++r) {
    std::vector<float> row;
    for (int k = 0; k < n; ++k) row.push_back(next() * (r + 1) * 0.7f);
    rows.push_back(row);
  }
  rows.push_back(std::vector<float>(n, 0.0f));
  rows.push_back(std::vector<float>(n, 0.75f));
  rows.push_back(std::vector<float>(n, -3.0f));
  std::vector<float> single(n, 0.0f);
  single[n - 1] = -1e-3f;
  rows.push_back(single);
  std::vector<float> tiny;
  for (int k = 0; k < n; ++k) tiny.push_back(1e-30f * static_cast<float>(k - 20));
  rows.push_back(tiny);
  for (int bits : {8, 4, 12, 16}) {
    for (bool symmetric : {false, true}) {
      if (bits > 8 && !symmetric) continue;
      ActivationQuant quant;
      quant.bits = bits;
      quant.symmetric = symmetric;
      SCOPED_TRACE(quant.to_string());
      expect_matches_reference(rows, n, quant);
    }
  }
}

}  // namespace
}  // namespace rnnc
