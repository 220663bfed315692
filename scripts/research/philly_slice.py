#!/usr/bin/env python3
"""Cut one day of the Philly job log (the Pollux artifact's `philly.csv`) for a time-based
replay on a cluster of GPUS GPUs, and print its load.

usage: philly_slice.py PHILLY_CSV DAY GPUS OUT_CSV

The slice is every job submitted on DAY (UTC, 00:00:00 to 23:59:59) that passes the filter
the Pollux artifact's `workload.py` applies before sampling (duration >= 60 s, GPU time
< 1000 GPU-hours), and asks for at most GPUS GPUs. It is written in the log's own layout
(`timestamp,duration,num_gpus,gpu_time,cluster`, submit order), which `gangplan simulate
--trace philly` reads. Its load is the GPU time submitted over the capacity of the day:

    load = sum(duration x num_gpus) / (GPUS x 86400 s)

Jobs submitted before DAY are left out (the cluster starts empty), and jobs run to their own
end, so a replay lasts beyond the day; the load is of the submitted work, not of the busy
period.
"""
import csv
import datetime
import sys


def main():
    src, day, gpus, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    start = datetime.datetime.fromisoformat(day)
    end = start + datetime.timedelta(days=1)
    rows = []
    with open(src, newline="") as f:
        for r in csv.DictReader(f):
            t = datetime.datetime.fromisoformat(r["timestamp"])
            d, g = float(r["duration"]), int(r["num_gpus"])
            if start <= t < end and d >= 60 and d * g < 1000 * 3600 and 1 <= g <= gpus:
                rows.append((t, r))
    rows.sort(key=lambda x: x[0])
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["timestamp", "duration", "num_gpus", "gpu_time", "cluster"])
        for _, r in rows:
            w.writerow([r["timestamp"], r["duration"], r["num_gpus"], r["gpu_time"], r["cluster"]])
    work = sum(float(r["duration"]) * int(r["num_gpus"]) for _, r in rows)
    offered = sum(int(r["num_gpus"]) *
                  (min((t - start).total_seconds() + float(r["duration"]), 86400) -
                   (t - start).total_seconds()) for t, r in rows)
    print(f"{out}: {len(rows)} jobs, load {offered / (gpus * 86400):.3f} on {gpus} GPUs "
          f"(work {work / (gpus * 86400):.3f})")


if __name__ == "__main__":
    main()
