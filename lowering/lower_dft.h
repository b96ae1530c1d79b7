// lower_dft: a DFT or STFT of a real signal -> one Halide pipeline: the transform as a GEMM
// against a constant matrix, built once at lowering time.
//
//   out(q, f, b) = sum over n < K of x(f * step + n, b) * T(n, q)       q = 2 * bin + part
//   T(n, 2k)     = w[n] cos(-+2 pi (k n mod N) / N) * s                  (s = 1/N when inverse)
//   T(n, 2k + 1) = w[n] sin(-+2 pi (k n mod N) / N) * s
//
// For STFT a row f is a frame, read from the signal in place at f * frame_step (no frame copy),
// K = frame_length and w the window (1 without one), folded into T. For DFT a row is one signal
// (the dims before the axis merged), step 0, K = min(signal length, dft_length) (samples past K
// are cut, the zero padding up to N contributes nothing) and w = 1. Both sides of a bin (real and
// imaginary) are adjacent columns of T, so the output's [bins, 2] run is one contiguous row of
// the GEMM. T is marshaled in the GEMM's B layout (N-tiles of nr columns, schedule_table.h) and
// the output is register-tiled as the float GEMM's (lower_dense.h tile_gemm_rows).
//
// O(N^2) per frame, as a matrix product: for the frame lengths of speech front-ends (a few hundred
// samples) it runs at the GEMM's rate; an FFT would do fewer operations at larger N.
#pragma once

#include <memory>

#include "lowering/block.h"
#include "lowering/halide_cache.h"

namespace rnnc {

// kUnsupported (the node then runs on its reference kernel) unless: float32; a real signal (last
// dim known to be 1); frame_step, frame_length, the window (STFT), dft_length and axis (DFT) are
// constants; the DFT's axis is the one before the last and its length is static.
std::unique_ptr<ExecutionBlock> lower_dft(const Node& node, HalideCache& cache);

}  // namespace rnnc
