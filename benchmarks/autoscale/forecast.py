"""A time-of-day forecast from the traffic already seen: the rate of the same hour on the most recent earlier
day of the same kind (weekday or weekend; any earlier day if none), turned into a replica floor that is in
place before the hour starts. The first day has no history: its floor is 0 (the reactive rule alone)."""
from __future__ import annotations

import math

import numpy as np

from benchmarks.autoscale.traffic import DAY_S, WEEKEND

HOUR_S = 3600


def hourly_output_rate(output_tokens: np.ndarray, tick_s: float) -> np.ndarray:
    """[days, 24] output tokens/s observed in each hour (hours past the data are NaN)."""
    per_hour = round(HOUR_S / tick_s)
    hours = math.ceil(len(output_tokens) / per_hour)
    padded = np.full(hours * per_hour, np.nan)
    padded[:len(output_tokens)] = output_tokens
    rate = np.nanmean(padded.reshape(hours, per_hour), axis=1) / tick_s
    days = math.ceil(hours / 24)
    out = np.full(days * 24, np.nan)
    out[:hours] = rate
    return out.reshape(days, 24)


def reference_day(day: int) -> int | None:
    """The most recent earlier day of the same kind, else the day before, else None."""
    weekend = day % 7 in WEEKEND
    for d in range(day - 1, -1, -1):
        if (d % 7 in WEEKEND) == weekend:
            return d
    return day - 1 if day > 0 else None


def replica_floor(output_tokens: np.ndarray, tick_s: float, tokens_per_replica_s: float) -> np.ndarray:
    """[ticks] replicas the forecast asks for: enough for the larger of this hour's and the next hour's
    forecast rate, at tokens_per_replica_s each (a replica at the autoscaler's target load)."""
    hourly = hourly_output_rate(output_tokens, tick_s)
    days = hourly.shape[0]
    forecast = np.zeros(days * 24 + 1)
    for day in range(days):
        ref = reference_day(day)
        if ref is not None:
            forecast[day * 24:(day + 1) * 24] = np.nan_to_num(hourly[ref])
    ahead = np.maximum(forecast[:-1], forecast[1:])  # hour h and h + 1: the floor rises before a ramp
    hour_of_tick = (np.arange(len(output_tokens)) * tick_s // HOUR_S).astype(int)
    return np.ceil(ahead[hour_of_tick] / tokens_per_replica_s - 1e-9).astype(int)


def day_kind(t_s: float) -> str:
    return "weekend" if int(t_s // DAY_S) % 7 in WEEKEND else "weekday"
