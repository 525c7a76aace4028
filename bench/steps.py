"""Where a compiled model's time goes, kernel family by kernel family, from bench.json.

`bench/gpu_vs_torch.py` times every step of each row's plan alone (`sinter bench --per-step`) and
records them as the row's `sinter_steps` ([{"name", "ms"}], in plan order). A model repeats its
kernels once a layer (`fused_matmul_add_gelu_12`, `..._19`, ...); a family is a kernel name
without its trailing plan index, and its time is the sum over the family's kernels. Comparing
two runs family by family shows which kernels a change moved:

    python3 bench/gpu_vs_torch.py --steps AFTER/bench.json [BEFORE/bench.json]

No dependencies beyond the standard library, so it runs anywhere bench.json was copied.
"""
import re

_INDEX = re.compile(r"_\d+$")


def family(name):
    """The kernel family of a step: its name without the trailing plan index."""
    return _INDEX.sub("", name)


def family_times(steps):
    """{family: (milliseconds summed, kernel count)} of a row's steps."""
    times = {}
    for step in steps:
        key = family(step["name"])
        total, count = times.get(key, (0.0, 0))
        times[key] = (total + step["ms"], count + 1)
    return times


def row_key(row):
    return (row.get("model"), row.get("batch"), row.get("precision"))


def steps_report(rows, baseline_rows=None, top=10, width=90):
    """The families of each row that has steps, slowest first (the baseline's order when one is
    given, with its times beside and the difference), and the rows' step sums."""
    baseline = {row_key(row): row for row in baseline_rows or [] if row.get("sinter_steps")}
    out = []
    for row in rows:
        steps = row.get("sinter_steps")
        if not steps:
            continue
        now = family_times(steps)
        before_row = baseline.get(row_key(row))
        before = family_times(before_row["sinter_steps"]) if before_row else None
        model, batch, precision = row_key(row)
        total = sum(ms for ms, _ in now.values())
        if before is None:
            out.append(f"{model} b{batch} {precision}: {total:.3f} ms of steps")
            order = sorted(now, key=lambda key: -now[key][0])
        else:
            before_total = sum(ms for ms, _ in before.values())
            out.append(f"{model} b{batch} {precision}: {before_total:.3f} -> {total:.3f} ms of steps")
            order = sorted(set(now) | set(before), key=lambda key: -max(before.get(key, (0, 0))[0],
                                                                        now.get(key, (0, 0))[0]))
        for key in order[:top]:
            ms, count = now.get(key, (0.0, 0))
            name = key if len(key) <= width else key[:width - 3] + "..."
            if before is None:
                out.append(f"  {ms:8.3f} x{count:<3d} {name}")
            else:
                was = before.get(key, (0.0, 0))[0]
                out.append(f"  {was:8.3f} -> {ms:8.3f} ({ms - was:+.3f}) x{count:<3d} {name}")
    return "\n".join(out)
