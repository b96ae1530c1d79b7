// Reference kernels for the signal ops (docs/ops/signal.md): the three cosine windows, DFT, STFT
// and MelWeightMatrix. Transforms are direct sums (O(n^2) per signal) in double with twiddles
// exp(-2 pi i (k n mod N) / N), so their error does not grow with the index; results are rounded
// once into the output type.
#include <cmath>
#include <complex>

#include "ir/reference/kernel.h"

namespace rnnc {

namespace {

constexpr double kPi = 3.14159265358979323846;

// A scalar input (one element) as an integer, or a data error naming it.
int64_t scalar_int(const KernelContext& context, size_t input, const char* name) {
  const Tensor& tensor = context.input(input);
  if (tensor.numel() != 1) {
    context.fail_input(
        cat("input '", name, "' has shape ", shape_text(tensor.shape()), ", expected a scalar"));
  }
  return tensor.get_int64(0);
}

DType output_datatype(const KernelContext& context) {
  std::optional<DType> dtype =
      dtype_from_onnx(static_cast<int32_t>(context.node.attr_int("output_datatype", 1)));
  RNNC_CHECK(dtype, "output_datatype passed shape inference");
  return *dtype;
}

// Generalized cosine windows a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), n in [0, size), with
// N = size (periodic) or size - 1 (symmetric).
void window_kernel(KernelContext& context) {
  const std::string& op = context.node.op_type();
  double a0 = 0.5, a1 = 0.5, a2 = 0;  // Hann
  if (op == "HammingWindow") {
    a0 = 25.0 / 46.0;
    a1 = 21.0 / 46.0;
  } else if (op == "BlackmanWindow") {
    a0 = 0.42;
    a1 = 0.5;
    a2 = 0.08;
  }
  int64_t size = scalar_int(context, 0, "size");
  if (size < 1) context.fail_input(cat("input 'size' = ", size, ", must be >= 1"));
  bool periodic = context.node.attr_int("periodic", 1) == 1;
  double n_total = static_cast<double>(periodic ? size : size - 1);
  Tensor out(output_datatype(context), {size});
  for (int64_t n = 0; n < size; ++n) {
    double phase = 2 * kPi * static_cast<double>(n) / n_total;
    out.set_double(n, a0 - a1 * std::cos(phase) + a2 * std::cos(2 * phase));
  }
  context.outputs[0] = out;
}

using Complex = std::complex<double>;

// X[k] = sum over n of x[n] exp(-+2 pi i k n / N) for k in [0, bins), divided by N when inverse.
void transform(const std::vector<Complex>& x, int64_t n_total, bool inverse, int64_t bins,
               std::vector<Complex>& out) {
  out.assign(static_cast<size_t>(bins), Complex(0, 0));
  double sign = inverse ? 1.0 : -1.0;
  for (int64_t k = 0; k < bins; ++k) {
    Complex sum(0, 0);
    for (int64_t n = 0; n < static_cast<int64_t>(x.size()) && n < n_total; ++n) {
      double phase =
          sign * 2 * kPi * static_cast<double>(k * n % n_total) / static_cast<double>(n_total);
      sum += x[static_cast<size_t>(n)] * Complex(std::cos(phase), std::sin(phase));
    }
    out[static_cast<size_t>(k)] = inverse ? sum / static_cast<double>(n_total) : sum;
  }
}

void dft_kernel(KernelContext& context) {
  const Node& node = context.node;
  const Tensor& x = context.input(0);
  int64_t rank = x.rank();
  int64_t parts = x.dim(rank - 1);
  int64_t axis = node.opset() >= 20 ? (context.has_input(2) ? scalar_int(context, 2, "axis") : -2)
                                    : node.attr_int("axis", 1);
  if (axis < -rank || axis > rank - 2 || axis == -1) {
    context.fail_input(cat("axis = ", axis, " is out of range for input rank ", rank));
  }
  size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  bool inverse = node.attr_int("inverse", 0) == 1;
  bool onesided = node.attr_int("onesided", 0) == 1;
  int64_t n_total = x.dim(static_cast<int64_t>(a));
  if (context.has_input(1)) {
    n_total = scalar_int(context, 1, "dft_length");
    if (n_total < 1) context.fail_input(cat("input 'dft_length' = ", n_total, ", must be >= 1"));
  }
  int64_t bins = onesided ? n_total / 2 + 1 : n_total;
  std::vector<int64_t> shape = x.shape();
  shape[a] = bins;
  shape.back() = 2;
  Tensor out(x.dtype(), shape);
  // Signals run along axis a: outer (dims before a) x inner (dims between a and the last).
  int64_t outer = 1, inner = 1;
  for (size_t k = 0; k < a; ++k) outer *= x.shape()[k];
  for (size_t k = a + 1; k + 1 < x.shape().size(); ++k) inner *= x.shape()[k];
  int64_t length = x.dim(static_cast<int64_t>(a));
  std::vector<Complex> signal, spectrum;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      signal.clear();
      for (int64_t n = 0; n < std::min(length, n_total); ++n) {
        int64_t at = ((o * length + n) * inner + i) * parts;
        signal.emplace_back(x.get_double(at), parts == 2 ? x.get_double(at + 1) : 0.0);
      }
      transform(signal, n_total, inverse, bins, spectrum);
      for (int64_t k = 0; k < bins; ++k) {
        int64_t at = ((o * bins + k) * inner + i) * 2;
        out.set_double(at, spectrum[static_cast<size_t>(k)].real());
        out.set_double(at + 1, spectrum[static_cast<size_t>(k)].imag());
      }
    }
  }
  context.outputs[0] = out;
}

// Frame f of each batch entry is signal[f * frame_step, f * frame_step + frame_length) times the
// window, transformed with N = frame_length.
void stft_kernel(KernelContext& context) {
  const Tensor& signal = context.input(0);
  if (signal.rank() != 3) {
    context.fail_input(cat("input 'signal' has shape ", shape_text(signal.shape()),
                           ", expected [batch, signal_length, 1 or 2]"));
  }
  int64_t step = scalar_int(context, 1, "frame_step");
  if (step < 1) context.fail_input(cat("input 'frame_step' = ", step, ", must be >= 1"));
  const Tensor* window = context.has_input(2) ? &context.input(2) : nullptr;
  int64_t frame_length = context.has_input(3) ? scalar_int(context, 3, "frame_length")
                         : window             ? window->numel()
                                              : 0;
  if (frame_length < 1) {
    context.fail_input(cat("frame_length = ", frame_length, ", must be >= 1"));
  }
  if (window && window->numel() != frame_length) {
    context.fail_input(cat("input 'window' has ", window->numel(), " elements but frame_length is ",
                           frame_length));
  }
  int64_t batch = signal.dim(0), length = signal.dim(1), parts = signal.dim(2);
  if (length < frame_length) {
    context.fail_input(
        cat("input 'signal' has ", length, " samples, fewer than frame_length ", frame_length));
  }
  bool onesided = context.node.attr_int("onesided", 1) == 1;
  int64_t frames = (length - frame_length) / step + 1;
  int64_t bins = onesided ? frame_length / 2 + 1 : frame_length;
  Tensor out(signal.dtype(), {batch, frames, bins, 2});
  std::vector<Complex> frame, spectrum;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t f = 0; f < frames; ++f) {
      frame.clear();
      for (int64_t n = 0; n < frame_length; ++n) {
        int64_t at = (b * length + f * step + n) * parts;
        double w = window ? window->get_double(n) : 1.0;
        frame.emplace_back(w * signal.get_double(at),
                           parts == 2 ? w * signal.get_double(at + 1) : 0.0);
      }
      transform(frame, frame_length, false, bins, spectrum);
      for (int64_t k = 0; k < bins; ++k) {
        int64_t at = ((b * frames + f) * bins + k) * 2;
        out.set_double(at, spectrum[static_cast<size_t>(k)].real());
        out.set_double(at + 1, spectrum[static_cast<size_t>(k)].imag());
      }
    }
  }
  context.outputs[0] = out;
}

// Triangular filters on the mel scale mel(f) = 2595 log10(1 + f / 700), computed as ONNX's
// reference does: num_mel_bins + 2 points spaced (mel(upper) - mel(lower)) / (num_mel_bins + 2)
// apart from mel(lower), mapped back to hertz and to the spectrogram bin
// floor((dft_length + 1) * hz / sample_rate); filter i rises from point i to point i + 1 (peak 1)
// and falls to point i + 2.
void mel_weight_matrix_kernel(KernelContext& context) {
  int64_t mel_bins = scalar_int(context, 0, "num_mel_bins");
  int64_t dft_length = scalar_int(context, 1, "dft_length");
  int64_t sample_rate = scalar_int(context, 2, "sample_rate");
  double lower = context.input(3).get_double(0), upper = context.input(4).get_double(0);
  if (mel_bins < 1 || dft_length < 1 || sample_rate < 1) {
    context.fail_input(cat("num_mel_bins ", mel_bins, ", dft_length ", dft_length,
                           " and sample_rate ", sample_rate, " must all be >= 1"));
  }
  if (!(lower >= 0 && lower <= upper)) {
    context.fail_input(cat("lower_edge_hertz ", lower, " and upper_edge_hertz ", upper,
                           " must satisfy 0 <= lower <= upper"));
  }
  int64_t spectrogram_bins = dft_length / 2 + 1;
  auto mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  double low_mel = mel(lower);
  double step = (mel(upper) - low_mel) / static_cast<double>(mel_bins + 2);
  std::vector<int64_t> points;
  for (int64_t i = 0; i < mel_bins + 2; ++i) {
    double hz = 700 * (std::pow(10.0, (static_cast<double>(i) * step + low_mel) / 2595) - 1);
    points.push_back(static_cast<int64_t>(
        std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate))));
  }
  if (points.back() >= spectrogram_bins) {
    context.fail_input(cat("upper_edge_hertz ", upper, " maps to spectrogram bin ", points.back(),
                           ", beyond the ", spectrogram_bins, " bins of dft_length ", dft_length));
  }
  std::vector<double> weights(static_cast<size_t>(spectrogram_bins * mel_bins), 0.0);
  auto at = [&](int64_t bin, int64_t filter) -> double& {
    return weights[static_cast<size_t>(bin * mel_bins + filter)];
  };
  for (int64_t i = 0; i < mel_bins; ++i) {
    int64_t left = points[static_cast<size_t>(i)], center = points[static_cast<size_t>(i + 1)],
            right = points[static_cast<size_t>(i + 2)];
    if (center == left) {
      at(center, i) = 1;
    } else {
      for (int64_t j = left; j <= center; ++j) {
        at(j, i) = static_cast<double>(j - left) / static_cast<double>(center - left);
      }
    }
    for (int64_t j = center; j < right; ++j) {
      at(j, i) = static_cast<double>(right - j) / static_cast<double>(right - center);
    }
  }
  Tensor out(output_datatype(context), {spectrogram_bins, mel_bins});
  for (int64_t k = 0; k < out.numel(); ++k) out.set_double(k, weights[static_cast<size_t>(k)]);
  context.outputs[0] = out;
}

}  // namespace

void register_signal_kernels(std::map<std::string, Kernel>& registry) {
  registry["HannWindow"] = window_kernel;
  registry["HammingWindow"] = window_kernel;
  registry["BlackmanWindow"] = window_kernel;
  registry["DFT"] = dft_kernel;
  registry["STFT"] = stft_kernel;
  registry["MelWeightMatrix"] = mel_weight_matrix_kernel;
}

}  // namespace rnnc
