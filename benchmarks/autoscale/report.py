"""The comparison as a table, the catalogue block the best policy implies, and the week as a chart."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from benchmarks.autoscale.study import Outcome, Setup
from benchmarks.autoscale.traffic import DAY_S, Traffic

DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]


def table(outcomes: list[Outcome]) -> str:
    base = next((o.figures.cost for o in outcomes if o.policy == "fixed peak"), None)
    rows = ["| policy | settings | replica-hours | cost | SLO attainment | requests within SLO | "
            "TTFT p99 | cost per 1M tokens | cost vs fixed peak |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for o in outcomes:
        f, s = o.figures, o.settings
        ratio = f"{f.cost / base:.2f}×" if base else "—"
        rows.append(f"| {o.policy} | {_settings(s)} | {f.replica_hours:,.0f} | "
                    f"${f.cost:,.2f} | {f.slo_attainment:.1%} | {f.within_slo:.2%} | {f.ttft_p99_s:.2f} s | "
                    f"${f.cost_per_million:.4f} | {ratio} |")
    return "\n".join(rows)


def _settings(s: dict) -> str:
    if s["min"] == s["max"]:
        return f"{s['min']} replicas"
    return (f"{s['min']}-{s['max']}, target {s['target_ongoing_requests']:g}, standby {s['standby']}, "
            f"delays {s['upscale_delay_s']:g} / {s['downscale_delay_s']:g} s")


def catalogue_block(best: Outcome, setup: Setup) -> str:
    """The version's `replicas:` settings for the best policy; max is the most replicas it had serving."""
    s = dict(best.settings)
    if best.policy != "fixed peak":
        s["max"] = max(s["min"], math.ceil(float(best.run.serving.max()) - 1e-9))
    fields = ", ".join(f"{k}: {v:g}" if isinstance(v, float) else f"{k}: {v}" for k, v in s.items())
    lines = [f"# {best.policy}: the cheapest policy with TTFT p99 <= {setup.ttft_slo_s:g} s in "
             f">= {setup.slo_target:.0%} of {setup.window_s / 60:g}-minute windows",
             f"replicas: {{{fields}}}"]
    if s["standby"]:
        lines.append("# the simulated warm pool keeps `standby` loaded beside whatever serves; Tollgate's standby "
                     "raises the floor (min + standby), the same thing until load needs more than min")
    if best.policy.startswith("predictive"):
        lines.append("# plus a floor by hour from the previous same-kind day, which the catalogue cannot express")
    return "\n".join(lines)


def _bins(values: np.ndarray, per_bin: int) -> np.ndarray:
    m = len(values) // per_bin * per_bin
    return values[:m].reshape(-1, per_bin).mean(axis=1)


def chart(path: Path, traffic: Traffic, outcomes: list[Outcome], bin_s: float = 600.0) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    per_bin = max(1, round(bin_s / traffic.tick_s))
    days = np.arange(len(traffic.rate) // per_bin) * per_bin * traffic.tick_s / DAY_S
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(14, 7.5), sharex=True, height_ratios=[1, 1.4])
    top.plot(days, _bins(traffic.arrivals / traffic.tick_s, per_bin), lw=0.8, color="black")
    top.set_ylabel("requests/s (10-min mean)")
    top.set_title("A synthetic week through the replica pool")
    for o in outcomes:
        bottom.plot(days, _bins(o.run.replicas, per_bin), lw=0.9, label=f"{o.policy} "
                    f"({o.figures.replica_hours:,.0f} replica-h, SLO {o.figures.slo_attainment:.1%})")
    bottom.set_ylabel("replicas paid for (10-min mean)")
    bottom.legend(loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=3, fontsize=8, frameon=False)
    span = math.ceil(len(traffic.rate) * traffic.tick_s / DAY_S)
    bottom.set_xticks(np.arange(span) + 0.5, [DAYS[d % 7] for d in range(span)])
    for ax in (top, bottom):
        for d in range(1, span):
            ax.axvline(d, color="grey", lw=0.4)
        ax.set_xlim(0, len(traffic.rate) * traffic.tick_s / DAY_S)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
