// The one layout abstraction lowering reads constant tensors through: lowering code indexes the
// logical tensor (its native ONNX shape, row-major), and a LayoutMap says where that element sits
// in the physical array the layout (Layout, below) arranges. Weights are marshaled into their
// layout once, at lowering time, by the same map.
//
//   native                  [d0, ..., dn-1] as is;
//   tiled(dk, T)            dk split into tiles of T elements, the tile index outermost and the
//                           element within a tile innermost: [ceil(dk / T), d0, .., dn-1 (without
//                           dk), T], zero padded. A MatMul's B [K, N] tiled(d1, 32) is
//                           [N/32][K][32]: each 32-column panel a GEMM micro-kernel streams is one
//                           contiguous run. Gemm's transB = 1 B [N, K] tiled(d0, 32) is the same
//                           physical array, so the transpose disappears into the layout.
//   permuted_padded(dk, T)  dk moved innermost and padded with zeros to a multiple of T:
//                           [d0, .., dn-1 (without dk), round_up(dk, T)]. A transB = 1 B [N, K]
//                           permuted_padded(d0, 16) is B^T [K, N] with N padded to the vector
//                           width.
//
// Halide indexes innermost-first, so the Halide form of the map takes and returns coordinates in
// that order (physical_coords). Padding elements are zero, so a kernel may compute over whole
// tiles and discard the padded columns.
#pragma once

#include <Halide.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace rnnc {

// Physical arrangement of a tensor's elements, chosen by lowering for the constants it marshals.
//   kNative          row-major in the logical dim order;
//   kTiled           logical dim `dim` split into tiles of `tile` elements: the tile index becomes
//                    the outermost dim and the element within a tile the innermost;
//   kPermutedPadded  dim `dim` moved innermost and padded with zeros to a multiple of `tile`.
struct Layout {
  enum class Kind { kNative, kTiled, kPermutedPadded };
  Kind kind = Kind::kNative;
  int dim = -1;
  int64_t tile = 0;

  bool is_native() const { return kind == Kind::kNative; }
  bool operator==(const Layout& other) const {
    return kind == other.kind && dim == other.dim && tile == other.tile;
  }
  std::string to_string() const;  // "native", "tiled(d1, 16)", "permuted_padded(d0, 16)"
};

class LayoutMap {
 public:
  // kInternal (RNNC_CHECK) for a layout whose dim is out of range or whose tile is not positive:
  // layouts are chosen by lowering, never read from a model.
  LayoutMap(std::vector<int64_t> logical_shape, Layout layout);

  const Layout& layout() const { return layout_; }
  const std::vector<int64_t>& logical_shape() const { return logical_; }
  const std::vector<int64_t>& physical_shape() const { return physical_; }  // row-major

  // Physical index (row-major order) of a logical index (row-major order).
  std::vector<int64_t> physical_index(const std::vector<int64_t>& logical) const;
  int64_t physical_offset(const std::vector<int64_t>& logical) const;

  // The same map on Halide expressions, both in Halide's innermost-first order.
  std::vector<Halide::Expr> physical_coords(const std::vector<Halide::Expr>& logical) const;

  // A copy of `native` (the logical shape, row-major) in this layout; padding is zero. Works for
  // every fixed-size dtype (bytes are moved, not converted).
  Tensor marshal(const Tensor& native) const;

  // "tiled(d1, 32) [128, 512] -> [16, 128, 32]": for cache keys and `rnnc plan`.
  std::string to_string() const;

 private:
  std::vector<int64_t> logical_;
  Layout layout_;
  std::vector<int64_t> physical_;
};

// A weight in its kernel's layout, zero-filled. From 1 MiB (half a Xeon core's L2) in 2 MiB huge
// pages (Tensor::huge_page_backed). A weight larger than L2 is streamed from L3 or DRAM at every
// call: in 4 KiB pages that walks a new page every 4 KiB, and a model's weights span more pages
// than the TLB holds. A recurrent R is re-read at every step: in 4 KiB pages part of it is lost to
// L2 set conflicts (docs/lowering.md, "Huge pages for large weights"). A smaller weight would
// waste most of a 2 MiB page.
Tensor marshaled_weight_tensor(DType dtype, std::vector<int64_t> shape);

}  // namespace rnnc
