// Special cases of the elementwise and dense math ops: matrix shapes that must agree, attributes
// whose legal values depend on the element type, shift amounts, exact halves for Round.
#include <cmath>

#include <map>

#include "ir/error.h"
#include "tests/conformance/draft.h"

namespace rnnc::conformance {

namespace {

// Sizes for M, K, N with the forced dim boundary on one of them.
std::vector<int64_t> matrix_dims(Draft& draft) {
  std::vector<int64_t> mkn = draft.random_dims(3, 1, 5);
  size_t which = static_cast<size_t>(draft.rng.uniform_int(0, 2));
  if (draft.forced_is(Boundary::kDim1)) mkn[which] = 1;
  if (draft.forced_is(Boundary::kDim0)) mkn[which] = 0;
  if (draft.forced_is(Boundary::kDimLarge)) mkn[which] = draft.rng.uniform_int(kLargeDim, 80);
  if (mkn[1] == 0) draft.tags.insert("empty_k");  // a sum over nothing: the product is 0
  return mkn;
}

// MatMul: numpy.matmul shapes. A's rank is the planned one; B's is random; K agrees; the batch
// dims broadcast (a suffix of a common batch shape, some dims 1).
void matmul(Draft& draft) {
  OperandDraft& a = *draft.input("A");
  OperandDraft& b = *draft.input("B");
  int64_t rank_a = static_cast<int64_t>(a.shape.size());
  int64_t rank_b = draft.rng.uniform_int(1, 4);
  std::vector<int64_t> mkn = matrix_dims(draft);
  int64_t m = mkn[0], k = mkn[1], n = mkn[2];
  int64_t batch_rank = std::max<int64_t>(0, std::max(rank_a, rank_b) - 2);
  std::vector<int64_t> batch = draft.random_dims(batch_rank, 1, 3);
  auto batch_of = [&](int64_t rank) {
    std::vector<int64_t> dims(batch.end() - std::max<int64_t>(0, rank - 2), batch.end());
    for (auto& d : dims) {
      if (draft.rng.chance(0.25)) d = 1;
    }
    return dims;
  };
  a.shape = batch_of(rank_a);
  if (rank_a == 1) {
    a.shape = {k};
  } else {
    a.shape.push_back(m);
    a.shape.push_back(k);
  }
  b.shape = batch_of(rank_b);
  if (rank_b == 1) {
    b.shape = {k};
  } else {
    b.shape.push_back(k);
    b.shape.push_back(n);
  }
}

// Gemm: A [M, K] (or [K, M] with transA), B [K, N] (or [N, K]), C one of the shapes that
// broadcast one way to [M, N]. Integer types take whole alpha and beta (fractional ones are
// unsupported: the spec does not say how to round).
void gemm(Draft& draft) {
  std::vector<int64_t> mkn = matrix_dims(draft);
  int64_t m = mkn[0], k = mkn[1], n = mkn[2];
  bool trans_a = draft.attr_int("transA", 0) != 0;
  bool trans_b = draft.attr_int("transB", 0) != 0;
  draft.input("A")->shape = trans_a ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k};
  draft.input("B")->shape = trans_b ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n};
  const std::vector<std::vector<int64_t>> c_shapes = {{}, {1}, {n}, {1, n}, {m, 1}, {m, n}, {1, 1}};
  draft.input("C")->shape = draft.rng.pick(c_shapes);
  if (is_integer(draft.types.at("T"))) {
    for (const char* name : {"alpha", "beta"}) {
      if (draft.has_attr(name)) draft.set_float(name, std::round(draft.attr_float(name, 1)));
    }
  }
}

// Mod: float types need fmod = 1 (integer mod of floats is not defined).
void mod(Draft& draft) {
  if (is_floating(draft.types.at("T"))) draft.set_int("fmod", 1);
}

// BitShift: shift amounts mostly below the type's width, some at or beyond it (the result is 0).
void bitshift(Draft& draft) {
  OperandDraft& shift = *draft.input("Y");
  int64_t bits = static_cast<int64_t>(dtype_size(shift.dtype) * 8);
  Tensor data(shift.dtype, shift.shape);
  for (int64_t i = 0; i < data.numel(); ++i) {
    int64_t amount = draft.rng.chance(0.1) ? draft.rng.uniform_int(bits, bits + 3)
                                           : draft.rng.uniform_int(0, bits - 1);
    data.set_double(i, static_cast<double>(amount));
  }
  if (data.numel() > 0 && std::string(draft.attr_string("direction", "")) == "LEFT") {
    draft.tags.insert("shift_left");
  }
  draft.set_data(shift, data);
}

// Round: about a third of the values are exact halves (x.5), where round-half-to-even matters.
void round_halves(Draft& draft) {
  OperandDraft& x = *draft.input("X");
  draft.fill(x);
  Tensor data = x.data.clone();
  for (int64_t i = 0; i < data.numel(); ++i) {
    if (draft.rng.chance(0.35))
      data.set_double(i, static_cast<double>(draft.rng.uniform_int(-8, 7)) + 0.5);
  }
  x.data = data;
}

// Shrink: tags the unsigned tests whose bias exceeds lambd, where x in (lambd, bias) gives
// x - bias < 0, below the type's range.
void shrink(Draft& draft) {
  DType dtype = draft.types.at("T");
  bool is_unsigned = dtype == DType::kUInt8 || dtype == DType::kUInt16 ||
                     dtype == DType::kUInt32 || dtype == DType::kUInt64;
  if (is_unsigned && draft.attr_float("bias", 0.0f) > draft.attr_float("lambd", 0.5f)) {
    draft.tags.insert("bias_above_lambd");
  }
}

// Einsum: an equation from a menu by operand count; each letter gets a size in 1..4 (0 for the
// dim0 boundary), the ellipsis 0..2 dims, some of them 1 (broadcast).
void einsum(Draft& draft) {
  static const std::vector<std::vector<std::string>> kMenu = {
      {"ij->ji", "ij->i", "ii->i", "ii", "abc->cab", "ijk->", "...ii->...i", "i j -> j i", "ij"},
      {"ij,jk->ik", "bij,bjk->bik", "i,i", "i,j->ij", "ij,ij->ij", "bhqd,bhkd->bhqk",
       "...ij,...jk->...ik", "ij,jk", "bi,bi->b"},
      {"ij,jk,kl->il", "i,i,i->", "bi,bj,bk->bijk", "ij,j,jk->ik"}};
  size_t count = draft.inputs.size();
  std::string equation = draft.attr_rng.pick(kMenu[count - 1]);
  draft.set_string("equation", equation);
  std::map<char, int64_t> sizes;
  std::vector<int64_t> ellipsis;
  int64_t ellipsis_rank = draft.rng.uniform_int(0, 2);
  for (int64_t k = 0; k < ellipsis_rank; ++k) ellipsis.push_back(draft.rng.uniform_int(1, 3));
  std::string left = equation.substr(0, equation.find("->"));
  size_t operand = 0;
  std::vector<int64_t> shape;
  auto finish = [&] {
    draft.inputs[operand].shape = shape;
    ++operand;
    shape.clear();
  };
  for (size_t i = 0; i < left.size(); ++i) {
    char c = left[i];
    if (c == ' ') continue;
    if (c == ',') {
      finish();
      continue;
    }
    if (left.compare(i, 3, "...") == 0) {
      // Every ellipsis covers the same dims (ONNX's rule); a 1 among them broadcasts.
      for (int64_t k = 0; k < ellipsis_rank; ++k) {
        shape.push_back(draft.rng.chance(0.2) ? 1 : ellipsis[static_cast<size_t>(k)]);
      }
      i += 2;
      continue;
    }
    if (!sizes.count(c)) {
      sizes[c] = draft.forced_is(Boundary::kDim0) && sizes.empty() ? 0 : draft.rng.uniform_int(1, 4);
    }
    shape.push_back(sizes[c]);
  }
  finish();
  if (equation.find("...") != std::string::npos) draft.tags.insert("ellipsis");
}

}  // namespace

void add_elementwise_special_cases(std::map<std::string, SpecialCase>& table) {
  table["matmul"] = matmul;
  table["gemm"] = gemm;
  table["mod"] = mod;
  table["bitshift"] = bitshift;
  table["round_halves"] = round_halves;
  table["shrink"] = shrink;
  table["einsum"] = einsum;
}

}  // namespace rnnc::conformance
