#!/usr/bin/python3
"""Writes enhance_scatter.onnx and enhance_concat.onnx: a small streaming speech-enhancement network
(models/README.md has its card), exported by Debian's PyTorch 1.13 at opset 11.

The shape is that of the streaming enhancement models users bring (DPCRN / GTCRN style):
  features x [1, 2, T, 16] (real/imag per (frame, frequency bin))
  -> Conv2d encoder, kernel 3 frames x 3 bins, causal in time (its 2 past frames come from a cache)
  -> intra-frame grouped bidirectional GRUs along frequency (sequence = bins, batch = frames)
  -> inter-frame grouped unidirectional GRUs along time (sequence = frames, batch = bins), their
     state from a cache
  -> ConvTranspose2d decoder back to 16 bins, a mask applied to the input.
The two caches are model inputs and outputs, so a streaming session carries them:
  conv_cache [1, 2, 2, 16]    the encoder's 2 past input frames
  gru_cache  [2, 1, 8, 8]     the state of each inter-frame GRU group (groups, 1, bins', hidden)
They are updated in place, the way streaming exports write them:
  enhance_scatter.onnx: `cache[:, :, 0:2] = frames[:, :, -2:]` and `gru_cache[g] = h_g` on the
                        cache inputs, which PyTorch exports at opset 11 as ScatterND;
  enhance_concat.onnx:  Concat(old cache, new frames) then a Slice keeping the newest 2 frames, and
                        Concat of the groups' states.
T (dim `time`) is dynamic: one run over T frames equals T runs of one frame with the caches carried.
Weights: torch's default initialisation under seed 26, the same for both files.

  /usr/bin/python3 models/make_enhancement.py [--out DIR]   # default DIR: build/models
"""
import argparse
import os
import warnings

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OPSET = 11
CHANNELS, BINS, PAST = 2, 16, 2          # input channels, frequency bins, cached past frames
ENCODED, ENCODED_BINS, GROUPS, HIDDEN = 16, 8, 2, 8


class Enhancer(nn.Module):
    def __init__(self, scatter):
        super().__init__()
        self.scatter = scatter
        self.encoder = nn.Conv2d(CHANNELS, ENCODED, kernel_size=(PAST + 1, 3), stride=(1, 2),
                                 padding=(0, 1))
        per_group = ENCODED // GROUPS
        self.intra = nn.ModuleList(
            nn.GRU(per_group, HIDDEN // 2, bidirectional=True) for _ in range(GROUPS))
        self.inter = nn.ModuleList(nn.GRU(HIDDEN, HIDDEN) for _ in range(GROUPS))
        self.decoder = nn.ConvTranspose2d(GROUPS * HIDDEN, CHANNELS, kernel_size=(1, 4),
                                          stride=(1, 2), padding=(0, 1))

    def forward(self, x, conv_cache, gru_cache):
        frames = torch.cat([conv_cache, x], dim=2)                      # [1, C, PAST + T, F]
        if self.scatter:
            conv_cache[:, :, 0:PAST] = frames[:, :, -PAST:]
            new_conv_cache = conv_cache
        else:
            new_conv_cache = frames[:, :, -PAST:]
        e = torch.relu(self.encoder(frames))                            # [1, E, T, F']
        t = e.shape[2]
        e = e.permute(3, 0, 2, 1).reshape(ENCODED_BINS, t, ENCODED)     # [F', T, E]: along bins
        intra = [gru(part)[0] for gru, part in zip(self.intra, e.chunk(GROUPS, dim=2))]
        intra = torch.cat(intra, dim=2)                                 # [F', T, GROUPS*HIDDEN]
        intra = intra.permute(1, 0, 2)                                  # [T, F', .]: along time
        outputs, states = [], []
        for g, (gru, part) in enumerate(zip(self.inter, intra.chunk(GROUPS, dim=2))):
            y, h = gru(part.contiguous(), gru_cache[g])
            outputs.append(y)
            states.append(h)
        if self.scatter:
            for g, h in enumerate(states):
                gru_cache[g] = h
            new_gru_cache = gru_cache
        else:
            new_gru_cache = torch.stack(states, dim=0)
        d = torch.cat(outputs, dim=2)                                   # [T, F', GROUPS*HIDDEN]
        d = d.permute(2, 0, 1).unsqueeze(0)                             # [1, ., T, F']
        mask = torch.sigmoid(self.decoder(d))                           # [1, C, T, F]
        return x * mask, new_conv_cache, new_gru_cache


def export(scatter, path):
    torch.manual_seed(26)
    model = Enhancer(scatter).eval()
    x = torch.randn(1, CHANNELS, 5, BINS)
    conv_cache = torch.zeros(1, CHANNELS, PAST, BINS)
    gru_cache = torch.zeros(GROUPS, 1, ENCODED_BINS, HIDDEN)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x, conv_cache, gru_cache), path, opset_version=OPSET,
                          input_names=["x", "conv_cache", "gru_cache"],
                          output_names=["y", "conv_cache_out", "gru_cache_out"],
                          dynamic_axes={"x": {2: "time"}, "y": {2: "time"}})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "models"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    export(True, os.path.join(args.out, "enhance_scatter.onnx"))
    export(False, os.path.join(args.out, "enhance_concat.onnx"))


if __name__ == "__main__":
    main()
