"""Per-step bands: is a run's curve regressed against the curves of runs
known to be good? Pure (no I/O, no settings read here), so that the nightly
(history.py, against a job's last good nights) and any other caller (a
bisection, against probes of a good commit) ask the same question:

    judge_runs(candidate_rows, [reference_rows, ...], Rule(k=5, steps=2))

where rows are metrics.step_lines() of a driver log (one dict of verl's keys
per step), or judge_curves() on curves() already taken.

The band of a figure at step s is median +- k * MAD of the references'
values at step s. The MAD used is the larger of that step's own, the spread
pooled over all steps (the median of the nonzero deviations from each step's
median: with 3 references the median is one of them, so a step's own MAD is
often near 0 by chance: in a simulation of 20 steps x 8 figures of
Gaussian noise (tests/test_helper/bands_simulation.py), per-step MADs alone
flagged every clean run against 3 references and 38% against 7; with the
pooled spread 1.3% against 3, none of 300 against 5 or 7, 25% against 2 (a
caller with 2 references should ask for 3 steps in a row: 2%), while a
shift of 4 sigma in one figure was found in 98% of runs against 3, 99%
against 7),
and `floor` times the figure's typical size (the median |value| of the
references; for a phase's share of the step, the whole step), so that a
history without spread (verl's full determinism, a constant) still allows
k * floor (10% by default) instead of nothing.
A figure is regressed when it stays outside its band on its worse side
(either side for a figure with no better direction) for `steps` consecutive
steps; a step tonight's log has no number for (nan) counts as outside."""
import math
from statistics import median
from typing import NamedTuple

# figure: (verl 0.9.1's keys, the first one the run logs is taken; the side that is worse).
# The loss is SFT's: PPO's and GRPO's policy loss (actor/pg_loss, verl/workers/utils/losses.py:119)
# is -advantage x ratio (verl/trainer/ppo/core_algos.py:1342) over advantages centred on each
# group's mean (core_algos.py:326), so it hovers about 0 by construction, its sign is the batch's
# draw, and a band in parts of its size is noise (the corpus: half of the probe's false alarms).
FIGURES = {
    "score": (("critic/score/mean",), "lower"),
    "loss": (("train/loss",), "both"),
    "grad_norm": (("actor/grad_norm", "train/grad_norm"), "both"),
    "entropy": (("actor/entropy",), "both"),
    "kl": (("actor/kl_loss", "actor/reward_kl_penalty"), "both"),
    "step_s": (("timing_s/step",), "higher"),
    "throughput": (("perf/throughput",), "lower"),
    "memory_gb": (("actor/perf/max_memory_allocated_gb", "perf/max_memory_allocated_gb"), "higher"),
}
# The phases verl 0.9.1 times within a step (marked_timer in the V1 trainer,
# verl/trainer/ppo/v1/trainer_base.py:565-609, and update_weights in
# v1/trainer_sync.py:36), each logged as timing_s/<phase> beside
# timing_s/step (verl/trainer/ppo/metric_utils.py:611). A phase's share of
# its step is a figure of its own ("<phase>_share", worse higher): a busier
# or slower machine stretches every phase of a step alike and leaves the
# shares where they were, while slower code stretches its own phase. On the
# corpus a sleep of 3 s in the advantage's computation took `adv` from 1% of
# the step to 22-39%, on the quiet machine and on the busy one, whose steps
# spread too wide for s/step to show it.
PHASES = ("gen", "reward", "old_log_prob", "ref", "values", "adv", "update_critic", "update_actor", "update_weights")
STEP_KEY = "timing_s/step"
FIGURES.update({f"{p}_share": ((f"timing_s/{p}",), "higher") for p in PHASES})
SHARES = tuple(f"{p}_share" for p in PHASES)
# The host memory a step added: verl's perf/cpu_memory_used_gb is psutil's
# used memory of the whole machine at the actor's step
# (verl/workers/engine_workers.py:221), not the job's own, so its level
# follows whatever else the host runs (the corpus's busy machine: 7.5 GB
# on a night whose other processes held 1.8 GB more, in a job that added
# nothing), while a leak adds memory at every step (the corpus's plant: 0.25
# GB a step, where same-code steps add 0.01-0.03). So the figure judged is
# cpu_memory_added_gb: each step's value less the step before's (from the
# second step; worse higher). A process that starts on the host mid-run adds
# one step's jump, a leak every step's.
ADDED = ("cpu_memory_added_gb",)
FIGURES["cpu_memory_added_gb"] = (("actor/perf/cpu_memory_used_gb", "perf/cpu_memory_used_gb"), "higher")
# verl logs 0 GPU bytes on CPUs: a curve of zeros is no curve.
NONZERO = ("memory_gb",)
BAD = {"lower": ("below", "nan"), "higher": ("above", "nan"), "both": ("above", "below", "nan")}


# Figures that need more than the nightly's rule, and the least of each
# (figure, Rule field, value): the nightly asks them of its bands
# (history.band_rule), each chosen on the corpus of real runs
# (docs/nightly.md, "How often the judge is wrong").
# - grad_norm, a third of the run's judged steps in a row (at least the
#   rule's steps): it strays for a step or two by design. At the first steps
#   it is the first rollouts' draw, and once every reply of a GRPO group
#   earns the same reward the group's advantages, (score - group mean) / std
#   (verl/trainer/ppo/core_algos.py:326), and its gradient are 0, a step or
#   two earlier in one run than in another. It was 3 steps in a row until
#   the corpus of 2026-11-30 held the KL term dropped (`nokl`): GRPO's 3-step
#   job has no gradient at step 1 (the policy is its reference, its
#   advantages 0), so 3 in a row could never flag it, while the plant put its
#   grad_norm at exactly 0 at steps 2-3, where same-code runs log 1.4e-6 to
#   3.2e-6 (the KL term's own gradient). A third caught 5 of those 5 nights
#   (3 steps: none), asks 4 of the probe's 10 steps, and took the quiet
#   machine's false alarms from 0.14 to 0 per 100 nights.
# - score, 8 MADs: where the learning probe takes off (steps 4-7) its runs
#   part by more than the MAD pooled over its flat first and saturated last
#   steps. On the corpus of 2026-11-30 (31 nights) it took the quiet
#   machine's false alarms from 14.1 to 9.6 per 100 nights, and every run
#   with advantages zeroed or flipped or a reward backwards was still caught
#   against every history drawn.
# - s/step and throughput, a third of the run's judged steps in a row (at
#   least the rule's steps): a slower commit slows every step, while a shared
#   host slows a step or three (the corpus's quiet machine: a step or two of
#   8-10 s among steps of 5-6 s on about 1 night in 10). On the corpus of
#   2026-11-30 (23 nights of the quiet machine) it took that machine's false
#   alarms from 9.6 to 1.3 per 100 nights: the probe's 10 steps need 4 in a
#   row (3 left 3.5), GRPO's 3 steps still 2, and every slow run was caught
#   as before.
# - the memory a step added, a third of the run's judged steps in a row:
#   a process started beside the job takes its memory at one step, a leak
#   at every step. On the corpus of 2026-11-30 (82 nights) this band, in
#   place of the whole machine's peak memory, took the busy machine's false
#   alarms from 25 to 12.5 per 100 nights (2 steps in a row: 25, one
#   night's jump), and caught every leak.
NIGHTLY_AT_LEAST = (("grad_norm", "share", 1 / 3), ("score", "k", 8.0), ("step_s", "share", 1 / 3),
                    ("throughput", "share", 1 / 3), ("cpu_memory_added_gb", "share", 1 / 3))


class Rule(NamedTuple):
    """k: the band's half-width in MADs; steps: how many consecutive steps
    outside make a regression; min_refs: references needed at a step for its
    band; floor: the MAD's least value, as a fraction of the figure's size;
    share: the least share of the judged steps those steps in a row must
    also cover (rounded up); at_least: (figure, field, value) triples: a
    figure that needs more."""
    k: float = 5.0
    steps: int = 2
    min_refs: int = 3
    floor: float = 0.02
    share: float = 0.0
    at_least: tuple = ()


def steps_needed(rule: Rule, judged: int) -> int:
    """The steps in a row outside a band that make a regression, of a run
    with `judged` steps in its band."""
    return max(rule.steps, math.ceil(round(rule.share * judged, 9)))


def for_figure(rule: Rule, name: str) -> Rule:
    """The rule figure `name` is judged by: `rule`, raised where at_least asks more of it."""
    raised = {field: max(getattr(rule, field), value) for figure, field, value in rule.at_least if figure == name}
    return rule._replace(**raised)


def curves(rows: list) -> dict:
    """figure -> {key, steps, values} of one run (a non-finite value: None)."""
    out = {}
    for name, (keys, _) in FIGURES.items():
        for key in keys:
            points = [(int(r["step"]), v) for r in rows if (v := value_of(name, r, key)) is not None]
            if name in ADDED:
                points = [(s, v - before) for (_, before), (s, v) in zip(points, points[1:])]
            if points and (name not in NONZERO or any(v for _, v in points)):
                out[name] = {"key": curve_key(name, key), "steps": [s for s, _ in points],
                             "values": [v if math.isfinite(v) else None for _, v in points]}
                break
    return out


def curve_key(name: str, key: str) -> str:
    """How a curve names what it holds: verl's key, or how the figure is made of it."""
    return f"{key} / {STEP_KEY}" if name in SHARES else f"{key} - the step before's" if name in ADDED else key


def value_of(name: str, row: dict, key: str):
    """Figure `name`'s value in a row (its key's number; a phase's share:
    its seconds over its step's), or None where the row has none."""
    value, step = row.get(key), row.get(STEP_KEY)
    if not isinstance(value, float):
        return None
    if name not in SHARES:
        return value
    return value / step if isinstance(step, float) and step > 0 else None


def bands(references: list, rule: Rule, whole: bool = False) -> dict:
    """step -> (low, median, high) of one figure, from the references' curves
    of it; only steps with at least rule.min_refs values. `whole`: the
    figure is a share of the step, and its floor is rule.floor of the whole
    step rather than of the share's own size (a phase of 1% of a step
    would otherwise be allowed 0.1% of it, and a host that stalls a small
    phase for a moment, as the corpus's slowed host did, would fail it)."""
    at: dict = {}
    for curve in references:
        for step, value in zip(curve["steps"], curve["values"]):
            if value is not None:
                at.setdefault(step, []).append(value)
    at = {s: vs for s, vs in at.items() if len(vs) >= rule.min_refs}
    if not at:
        return {}
    mids = {s: median(vs) for s, vs in at.items()}
    devs = {s: [abs(v - mids[s]) for v in vs] for s, vs in at.items()}
    pooled = median([d for ds in devs.values() for d in ds if d > 0] or [0.0])
    floor = rule.floor * (1.0 if whole else median(abs(v) for vs in at.values() for v in vs))
    out = {}
    for s, mid in sorted(mids.items()):
        half = rule.k * max(median(devs[s]), pooled, floor)
        out[s] = (mid - half, mid, mid + half)
    return out


def side(value, band: tuple) -> str:
    """Where a value lies against its band: above, below, nan, or '' (inside)."""
    if value is None:
        return "nan"
    return "above" if value > band[2] else "below" if value < band[0] else ""


def stretches(steps: list, bad: list) -> list:
    """[first, last] of each run of consecutive steps that are bad."""
    runs: list = []
    for step, is_bad in zip(steps, bad):
        if not is_bad:
            continue
        if runs and runs[-1][1] == step - 1:
            runs[-1][1] = step
        else:
            runs.append([step, step])
    return runs


def judge_figure(name: str, candidate: dict, references: list, rule: Rule) -> dict:
    """One figure's verdict: regressed True/False, or None (no band: too few
    references log it), with the band and tonight's values step by step."""
    worse = FIGURES[name][1]
    rule = for_figure(rule, name)
    same = [c for c in references if c.get("key") == candidate["key"]]
    band = bands(same, rule, name in SHARES)
    steps = [s for s in candidate["steps"] if s in band]
    out = {"figure": name, "key": candidate["key"], "worse": worse, "references": len(same)}
    if not steps:
        return {**out, "regressed": None, "evidence": f"{name} ({candidate['key']}): no band: {len(same)} reference "
                f"run(s) log it, {rule.min_refs} needed at a step"}
    values = dict(zip(candidate["steps"], candidate["values"]))
    sides = [side(values[s], band[s]) for s in steps]
    runs = stretches(steps, [sd in BAD[worse] for sd in sides])
    rule = rule._replace(steps=steps_needed(rule, len(steps)), share=0.0)
    out.update(steps=steps, values=[values[s] for s in steps], sides=sides,
               low=[band[s][0] for s in steps], mid=[band[s][1] for s in steps], high=[band[s][2] for s in steps],
               stretches=[r for r in runs if r[1] - r[0] + 1 >= rule.steps],
               longest=max((r[1] - r[0] + 1 for r in runs), default=0))
    out["regressed"] = bool(out["stretches"])
    out["evidence"] = evidence(out, rule)
    return out


def evidence(fig: dict, rule: Rule) -> str:
    """A figure's verdict in words: a regression names the step range, the
    side and the band at its first step."""
    label = f"{fig['figure']} ({fig['key']})"
    if not fig["regressed"]:
        inside = sum(1 for sd in fig["sides"] if not sd)
        return (f"{label} within its band at {inside}/{len(fig['steps'])} steps (median +- {rule.k:g} MAD of "
                f"{fig['references']} runs; at most {fig['longest']} step(s) in a row outside its worse side, "
                f"{rule.steps} make a regression)")
    first, last = fig["stretches"][0]
    i = fig["steps"].index(first)
    value, where = fig["values"][i], {"above": "above", "below": "below", "nan": "not a number,"}[fig["sides"][i]]
    more = len(fig["stretches"]) - 1
    return (f"{label} {where} its band at steps {first}-{last} ({last - first + 1} in a row, {rule.steps} make a "
            f"regression): {'nan' if value is None else f'{value:.4g}'} vs band [{fig['low'][i]:.4g}, "
            f"{fig['high'][i]:.4g}] (median {fig['mid'][i]:.4g} +- {rule.k:g} MAD of {fig['references']} runs) "
            f"at step {first}" + (f"; {more} more stretch(es)" if more else ""))


def judge_curves(candidate: dict, references: list, rule: Rule = Rule()) -> dict:
    """The verdict on a run's curves (curves()) against reference runs'
    curves: regressed True/False, or None when no figure had a band; the
    reasons (a regressed figure's evidence each) and every figure's verdict."""
    figures = [judge_figure(name, candidate[name], [r[name] for r in references if name in r], rule)
               for name in FIGURES if name in candidate]
    judged = [f for f in figures if f["regressed"] is not None]
    reasons = [f["evidence"] for f in judged if f["regressed"]]
    return {"regressed": bool(reasons) if judged else None, "reasons": reasons, "figures": figures}


def judge_runs(candidate_rows: list, reference_rows: list, rule: Rule = Rule()) -> dict:
    """judge_curves() on metrics.step_lines() rows: the candidate's, and a
    list of the reference runs' rows."""
    return judge_curves(curves(candidate_rows), [curves(rows) for rows in reference_rows], rule)
