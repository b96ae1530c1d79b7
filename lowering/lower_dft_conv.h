// lower_dft_conv: a 1-D Conv whose constant weights are a windowed DFT basis -> one Halide
// pipeline computing the transform by two short DFTs instead of the product with the weights.
//
// Speech front-ends export their STFT as a Conv (Silero VAD's first layer: 258 filters of 256
// taps, hop 128): for a frame length N the filters are rows
//     W[m, 0, n]     =  w[n] cos(2 pi m n / N)      m in [0, B), B = N / 2 + 1 (real parts)
//     W[B + m, 0, n] = -w[n] sin(2 pi m n / N)                                  (imaginary parts)
// so out[b, :, f] is the one-sided DFT of frame f (samples f * hop ...) times the window w.
// As a direct convolution that is 2 B N multiply-adds per frame and 2 B N weights read per run
// (264 KB for Silero, a quarter of its weights). Here, with N = N1 * N2, n = n1 + N1 n2 and
// k = k2 + N2 k1 (the four-step factorization of the DFT):
//     A(k2, n1) = sum_n2 w[n] x[n] e^(-2 pi i n2 k2 / N2)        N1 DFTs of length N2 (real input)
//     X(k)      = sum_n1 A(k2, n1) e^(-2 pi i n1 k2 / N) e^(-2 pi i n1 k1 / N1)
// about (2 N2 + 4 N1) N multiply-adds per frame (N = 256: 16 x 16, 6.5x fewer) over tables of
// O(N) floats. Vectorized along k2: n2 is one vector or less, or whole vectors.
//
// The match: C = 1 input channel, 2 B output channels, no bias, group 1, dilation 1, no padding,
// and every weight within 1e-6 of the largest weight's magnitude of the basis over w = row 0
// (cos 0 = 1). The pipeline computes the exact basis of that w, so each output differs from the
// direct convolution by at most 1e-6 * max|W| * sum|x| over the frame: below float32's own
// rounding of a 256-term sum (about 256 * 6e-8 of the sum's terms). Weights that are all
// integers are not matched: they are an integer convolution, which must stay exact.
#pragma once

#include <memory>

#include "ir/graph.h"
#include "lowering/block.h"
#include "lowering/halide_cache.h"
#include "lowering/lower_dense.h"

namespace rnnc {

// The block, or nullptr when the Conv (its one spatial axis `axis`, conv_axes) is not a DFT
// basis as above (the direct convolution then lowers it).
std::unique_ptr<ExecutionBlock> lower_dft_conv(const Node& conv, const ConvAxis& axis,
                                               HalideCache& cache);

}  // namespace rnnc
