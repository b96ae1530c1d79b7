#include "ir/dim.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace rnnc {
namespace {

TEST(Dim, KnownArithmeticStaysKnown) {
  EXPECT_EQ((Dim(3) * Dim(4) + Dim(1)).value(), 13);
  EXPECT_TRUE((Dim(3) - Dim(3)).is_known());
}

TEST(Dim, SymbolicProductDividesBackExactly) {
  Dim flat = Dim::symbol("seq") * Dim::symbol("batch") * Dim(512);
  EXPECT_EQ(flat.to_string(), "512*batch*seq");
  EXPECT_EQ(flat.exact_div(Dim(512)), Dim::symbol("batch") * Dim::symbol("seq"));
  EXPECT_EQ(flat.exact_div(Dim::symbol("batch") * Dim(512)), Dim::symbol("seq"));
  EXPECT_TRUE(flat.exact_div(Dim(3)).is_unknown());
}

TEST(Dim, SumsPrintInStableOrder) {
  Dim d = Dim::symbol("seq") - Dim(1);
  EXPECT_EQ(d.to_string(), "seq - 1");
  EXPECT_EQ((Dim::symbol("seq") + Dim::symbol("seq")).to_string(), "2*seq");
}

TEST(Dim, UnknownNeverEqualsAnything) {
  EXPECT_NE(Dim::unknown(), Dim::unknown());
  EXPECT_TRUE((Dim::unknown() + Dim(1)).is_unknown());
}

// Coefficients that overflow int64 (dims of a corrupt or fuzzed model) give an unknown dim, not
// undefined behaviour; found by fuzz_import (5555555555555555555 * 555).
TEST(Dim, OverflowingArithmeticIsUnknown) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_TRUE((Dim(5555555555555555555) * Dim(555)).is_unknown());
  EXPECT_TRUE((Dim::symbol("seq") * Dim(big) * Dim(2)).is_unknown());
  EXPECT_TRUE((Dim(big) + Dim(1)).is_unknown());
  EXPECT_TRUE((Dim(std::numeric_limits<int64_t>::min()) - Dim(1)).is_unknown());
  EXPECT_TRUE(Dim(std::numeric_limits<int64_t>::min()).exact_div(Dim(-1)).is_unknown());
  EXPECT_EQ(Dim(std::numeric_limits<int64_t>::min()).to_string(), "-9223372036854775808");
  EXPECT_FALSE((Dim::symbol("seq") * Dim(big)).evaluate({{"seq", 2}}).has_value());
  EXPECT_FALSE((Dim::symbol("seq") + Dim(big)).evaluate({{"seq", 1}}).has_value());
  EXPECT_EQ((Dim(big) - Dim(1)).value(), big - 1);
}

TEST(Dim, EvaluatesWithBindings) {
  Dim d = Dim::symbol("seq") * Dim(2) + Dim(1);
  EXPECT_EQ(d.evaluate({{"seq", 17}}), 35);
  EXPECT_FALSE(d.evaluate({{"batch", 1}}).has_value());
}

// The printed form tells one symbol from sizes, unknowns and expressions (TensorInfo::dims).
TEST(Dim, PrintedSymbolsAreTold) {
  EXPECT_TRUE(is_symbol_text(Dim::symbol("input_dim0").to_string()));
  EXPECT_FALSE(is_symbol_text(Dim(512).to_string()));
  EXPECT_FALSE(is_symbol_text(Dim::unknown().to_string()));
  EXPECT_FALSE(is_symbol_text((Dim::symbol("seq") * Dim(2)).to_string()));
  EXPECT_FALSE(is_symbol_text((Dim::symbol("seq") - Dim(1)).to_string()));
  EXPECT_FALSE(is_symbol_text((Dim::symbol("seq") * Dim::symbol("batch")).to_string()));
}

}  // namespace
}  // namespace rnnc
