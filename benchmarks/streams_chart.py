#!/usr/bin/python3
"""Chart of `rnnc streams` sweeps: p99 chunk latency against the number of streams, one line per
sweep (batching off and on), with the latency budget and the chunk period as horizontal lines.

  /usr/bin/python3 benchmarks/streams_chart.py --out docs/streams.png --budget-ms 100 \
      "batching off=off.txt" "batching on=on.txt"

Each file is the standard output of one `rnnc streams MODEL --streams N,N,...` run (or of a
`--find-max` search, whose counts are drawn in order). With `--trials`, the line goes through each
count's median trial (ranked as the search ranks them: a trial that fell behind above every trial
that kept up) and the other trials are small dots. A median trial that fell behind (kept_up "no")
is drawn hollow. Needs Debian's python3-matplotlib.
"""
import argparse
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_sweep(path):
    """Per stream count its trials' (p99_ms, kept_up), and the chunk period in ms, from one
    output."""
    trials, period = {}, None
    with open(path) as lines:
        for line in lines:
            match = re.search(r"one per ([0-9.]+) ms per stream", line)
            if match:
                period = float(match.group(1))
            fields = line.split()
            if len(fields) == 9 and fields[0].isdigit():
                trials.setdefault(int(fields[0]), []).append((float(fields[2]), fields[8] == "yes"))
    return trials, period


def median_trial(trials):
    """The trial `rnnc streams --find-max` judges a count by."""
    ranked = sorted(trials, key=lambda t: (not t[1], t[0]))
    return ranked[len(ranked) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--budget-ms", type=float, default=100)
    parser.add_argument("--title", default="")
    parser.add_argument("sweeps", nargs="+", help="LABEL=FILE")
    args = parser.parse_args()
    figure, axes = plt.subplots(figsize=(7, 4.2))
    period = None
    for sweep in args.sweeps:
        label, path = sweep.split("=", 1)
        trials, period = read_sweep(path)
        streams = sorted(trials)  # --find-max tries counts out of order
        medians = [median_trial(trials[n]) for n in streams]
        line, = axes.plot(streams, [m[0] for m in medians], marker="o", label=label)
        others = [(n, p99) for n in streams for p99, _ in trials[n]]
        if any(len(trials[n]) > 1 for n in streams):
            axes.plot([n for n, _ in others], [p for _, p in others], ".", markersize=3,
                      alpha=0.5, color=line.get_color())
        hollow = [(n, m[0]) for n, m in zip(streams, medians) if not m[1]]
        if hollow:
            axes.plot([s for s, _ in hollow], [p for _, p in hollow], "o", markerfacecolor="white",
                      markeredgecolor=line.get_color())
    axes.axhline(args.budget_ms, color="gray", linestyle="--", label=f"p99 budget {args.budget_ms:g} ms")
    if period:
        axes.axhline(period, color="gray", linestyle=":", label=f"chunk period {period:g} ms")
    axes.set_yscale("log")
    axes.set_xlabel("real-time streams")
    axes.set_ylabel("p99 chunk latency (ms)")
    axes.set_title(args.title)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(args.out, dpi=110)


if __name__ == "__main__":
    main()
