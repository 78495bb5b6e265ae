#!/usr/bin/python3
"""The state-size curve of test/bench/retire_state.sh: total rows and bytes of
the fencing.* tables against jobs done, with retirement off and on, from
bench/data/retire-state-{off,on}.csv, to PLOTS/retire-state.{dat,gp,svg}
(gnuplot), and a summary table on stdout.

    /usr/bin/python3 test/bench/retire_plot.py bench/data bench/plots
"""
import collections
import csv
import os
import subprocess
import sys

data, plots = sys.argv[1], sys.argv[2]
series = {}
for mode in ("off", "on"):
    path = os.path.join(data, f"retire-state-{mode}.csv")
    if not os.path.exists(path):
        continue
    # One sample is one line per table (each line has its own clock reading):
    # a table seen again starts the next sample.
    samples = collections.OrderedDict()
    per_table = collections.defaultdict(dict)
    seen = set()
    key = None
    with open(path) as f:
        for row in csv.DictReader(f):
            if key is None or row["table"] in seen:
                key = float(row["elapsed_s"])
                seen = set()
                samples[key] = {"jobs": int(row["jobs_done"]), "rows": 0, "bytes": 0}
            seen.add(row["table"])
            s = samples[key]
            s["rows"] += int(row["rows"])
            s["bytes"] += int(row["bytes"])
            per_table[row["table"]][key] = (int(row["rows"]), int(row["bytes"]))
    series[mode] = (samples, per_table)

dat = os.path.join(plots, "retire-state.dat")
with open(dat, "w") as f:
    for i, (mode, (samples, _)) in enumerate(series.items()):
        if i:
            f.write("\n\n")
        f.write(f"# retirement {mode}: elapsed_s jobs_done rows bytes\n")
        for t, s in samples.items():
            f.write(f"{t} {s['jobs']} {s['rows']} {s['bytes']}\n")

gp = os.path.join(plots, "retire-state.gp")
with open(gp, "w") as f:
    f.write(f"""set terminal svg size 900,420 dynamic font 'sans,11'
set output '{os.path.join(plots, "retire-state.svg")}'
set multiplot layout 1,2 title 'fencing.* tables, all together, during the job queue (test/bench/retire_state.sh)' noenhanced
set key top left
set xlabel 'jobs done'
set ylabel 'rows'
set format x '%.0s%c'
set format y '%.0s%c'
""")
    plots_rows = []
    plots_bytes = []
    for i, mode in enumerate(series):
        plots_rows.append(f"'{dat}' index {i} using 2:3 with lines lw 2 title 'retirement {mode}'")
        plots_bytes.append(f"'{dat}' index {i} using 2:($4/1048576) with lines lw 2 title 'retirement {mode}'")
    f.write("plot " + ", ".join(plots_rows) + "\n")
    f.write("set ylabel 'MB'\nset format y '%g'\n")
    f.write("plot " + ", ".join(plots_bytes) + "\nunset multiplot\n")
subprocess.run(["gnuplot", gp], check=True)

print("| mode | jobs done | table | rows at end | bytes at end | max rows | max bytes |")
print("|---|---:|---|---:|---:|---:|---:|")
for mode, (samples, per_table) in series.items():
    last = next(reversed(samples))
    for table in sorted(per_table):
        values = per_table[table]
        rows, size = values[max(values)]
        print(f"| {mode} | {samples[last]['jobs']:,} | `fencing.{table}` | {rows:,} | {size:,} | "
              f"{max(v[0] for v in values.values()):,} | {max(v[1] for v in values.values()):,} |")
