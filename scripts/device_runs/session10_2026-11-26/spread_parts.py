"""What the candidate's spread over five evaluations is made of, from recorded bench_eval
files (no GPU): per run, the judge's figure (window less floor, per call), the worker's own
CUDA events per call (the figure times candidate_report_ratio: evidence, never a figure), and
the floor; then each one's max/min over the runs.
Run: python3 spread_parts.py FILE.json [FILE.json ...]"""
import json
import sys


def main() -> None:
    for path in sys.argv[1:]:
        d = json.load(open(path))
        for shape in d["shapes"]:
            runs = shape["runs"]
            judge = [r["candidate_ms"] * 1e3 for r in runs]
            events = [r["candidate_ms"] * 1e3 * r["timing"]["candidate_report_ratio"] for r in runs]
            floor = [r["timing"]["floor_ms"] for r in runs]
            speed = [r["speedup"] for r in runs]
            print(f"{path} {shape['shape']}")
            for j, e, f, s in zip(judge, events, floor, speed):
                print(f"  judge {j:8.2f} us  worker events {e:8.2f} us  floor {f:.3f} ms  speedup {s:.3f}")
            mm = lambda xs: max(xs) / min(xs)
            print(f"  max/min: judge {mm(judge):.3f}, worker events {mm(events):.3f}, floor {mm(floor):.3f}, "
                  f"speedup {mm(speed):.3f}")


if __name__ == "__main__":
    main()
