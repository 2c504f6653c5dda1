"""The nightly's resume fidelity: one job of the night is interrupted at a
random step (the launcher SIGKILLs its trainer once verl logged that step,
stopper.py), resumed by `--retry 1` from its newest checkpoint, and its
resumed curve compared, step by step, with an uninterrupted run of the same
submission and seed (the reference, run earlier the same night).

`stop-step` draws the step: uniformly between the reference's save_freq (the
first step with a checkpoint behind it) and its last step but one (something
is left to resume). The check `resume_fidelity` then asks, from the job
directories alone:
- the first job was interrupted (the stopper's record: SIGKILL after step K)
  and ended FAILED; a resumption followed and SUCCEEDED;
- the chain logged the reference's steps: the first job every step before
  its checkpoint's (that one too, unless the kill came between verl's save
  and its log line), the resumptions every step after it;
- each figure of each resumed step (score and grad_norm for PPO/GRPO, loss
  and grad_norm for SFT) equals the reference's when both ran under verl's
  full determinism (rollout.full_determinism=true on the V0 trainer,
  trainer.use_v1=false), else differs by at most its band
  (MVP_NIGHTLY_RESUME_BAND, absolute). The evidence also gives the same
  difference over the steps the first job ran before the kill: what a mere
  rerun differs by, the measure the band is set against."""
import random
from pathlib import Path

from ..jobs.planning import ckpt_keep, workloads
from ..jobs.after_sending import resumed_check
from ..jobs.after_sending.chain import chain_text, resumed_from
from ..worker import fsutil
from ..worker.errors import MvpError
from ..worker.jobdir import JobDir
from ..core import metrics

NAME = "resume_fidelity"


def _overrides(jobs: Path, sid: str) -> dict:
    res = JobDir.of(jobs, sid).resolved()
    return {k.lstrip("+"): str(v) for k, v in (res.get("trainer_overrides") or {}).items()}


def _curve(jobs: Path, sid: str) -> dict:
    """step -> the metrics of that training step in the job's driver log."""
    return {int(r["step"]): r for r in _rows(JobDir.of(jobs, sid))}


def _rows(jd: JobDir) -> list:
    text = jd.driver_log_text()
    if text is None:
        return []
    return [r for r in metrics.step_lines(text) if any(k != "step" and not k.startswith("val") for k in r)]


def stop_step(jobs: Path, reference: str, rng=random) -> tuple:
    """(K, lowest, highest): the step to interrupt after, drawn at random."""
    steps = sorted(_curve(jobs, reference))
    save_freq = int(_overrides(jobs, reference).get("trainer.save_freq", "0") or 0)
    if not steps or save_freq < 1 or steps[-1] - 1 < save_freq:
        raise MvpError(f"resume fidelity: the reference {reference} logged {len(steps)} steps with "
                       f"trainer.save_freq={save_freq}: no step after its first checkpoint and before its last step "
                       "to interrupt at; give the job more steps or a smaller save_freq (MVP_NIGHTLY_OVERRIDES)")
    return rng.randint(save_freq, steps[-1] - 1), save_freq, steps[-1] - 1


def deterministic(overrides: dict) -> bool:
    """verl's full_determinism, which holds on the V0 trainer only (#6572)."""
    return (overrides.get("actor_rollout_ref.rollout.full_determinism", "").lower() == "true"
            and overrides.get("trainer.use_v1", "").lower() == "false")


def _result(passed, evidence: str) -> dict:
    return {"name": NAME, "passed": passed, "evidence": evidence}


def check_not_judged(why: str) -> dict:
    return _result(None, why)


def check_failed(why: str) -> dict:
    return _result(False, why)


def interrupted(jobs: Path, chain: list, stop_at: int) -> str:
    """"" when the chain's first job was interrupted and resumed to the end,
    else what went wrong."""
    record = fsutil.read_json(JobDir.of(jobs, chain[0]).interrupt, {}) or {}
    status = [JobDir.of(jobs, sid).status() for sid in chain]
    if not record.get("killed"):
        return (f"{chain[0]} was not interrupted: it ended {status[0]} after verl logged step "
                f"{record.get('last_step_seen', '?')}, before step {stop_at} (stopper record: {record or 'none'})")
    if status[0] != "FAILED":
        return f"{chain[0]} was SIGKILLed after step {record['last_step_seen']} but ended {status[0]}, not FAILED"
    if len(chain) < 2 or status[-1] != "SUCCEEDED":
        return f"the chain {chain_text(chain)} ended {' -> '.join(map(str, status))}: no resumption succeeded"
    return ""


def _diff(ref: dict, curve: dict, steps: list, key: str):
    """The largest |difference| of key over steps, and where; None when a step lacks it."""
    worst = None
    for s in steps:
        a, b = ref[s].get(key), curve[s].get(key)
        if not isinstance(a, float) or not isinstance(b, float):
            return None
        if worst is None or abs(a - b) > worst[0]:
            worst = (abs(a - b), s)
    return worst


def differences(ref: dict, after: dict, workload: str) -> dict:
    """figure -> the largest |difference| of a resumed curve (after: step ->
    row) from its reference's (ref) over the resumed steps, or None when a
    step lacks the figure."""
    steps = sorted(s for s in after if s in ref)
    return {name: (worst or (None,))[0] for key, name in workloads.for_job(workload).resume_figures
            for worst in [_diff(ref, after, steps, key)]}


def within_band(ref: dict, after: dict, workload: str, band: dict) -> bool:
    """Whether every resumed step's figures lie within `band` of the
    reference's, as the check judges them off full determinism (at least one
    figure compared)."""
    found = {name: d for name, d in differences(ref, after, workload).items() if d is not None}
    return bool(found) and all(d <= float(band.get(name, 0)) for name, d in found.items())


def check(jobs: Path, chain: list, reference: str, stop_at: int, band: dict) -> dict:
    why = interrupted(jobs, chain, stop_at)
    if why:
        return _result(False, why)
    from_step = resumed_check.checkpoint_step(resumed_from(jobs, chain[1])) or 0
    ref = _curve(jobs, reference)
    before = {s: r for s, r in _curve(jobs, chain[0]).items() if s <= from_step}
    after = {}
    for sid in chain[1:]:
        after.update(_curve(jobs, sid))
    want = sorted(s for s in ref if s > from_step)
    # verl saves a step's checkpoint (ppo/ray_trainer.py:1712) before it logs
    # the step (:1802): a kill in between leaves the checkpoint's own step
    # unlogged, every step before it logged.
    logged = sorted(s for s in before if s != from_step)
    if sorted(after) != want or logged != sorted(s for s in ref if s < from_step):
        return _result(False, f"steps differ from {reference}'s: before the checkpoint {sorted(before)}, resumed "
                              f"{sorted(after)}; {reference} logged {sorted(ref)}")
    return _compare(jobs, chain, reference, ref, before, after, from_step, band)


def _compare(jobs, chain, reference, ref, before, after, from_step, band) -> dict:
    workload = JobDir.of(jobs, chain[0]).resolved().get("workload", "")
    exact = deterministic(_overrides(jobs, chain[0])) and deterministic(_overrides(jobs, reference))
    said, ok, compared = [], True, 0
    for key, name in workloads.for_job(workload).resume_figures:
        limit = 0.0 if exact else float(band.get(name, 0))
        worst = _diff(ref, after, sorted(after), key)
        rerun = _diff(ref, before, sorted(before), key)
        if worst is None:
            said.append(f"{name} ({key}): not in every step's line, not compared")
            continue
        ok, compared = ok and worst[0] <= limit, compared + 1
        said.append(f"{name}: max |resumed - {reference}| {worst[0]:.4g} at step {worst[1]} "
                    f"({'<=' if worst[0] <= limit else '>'} {'0, equal under determinism' if exact else f'band {limit:g}'})"
                    + (f"; rerun steps 1-{from_step} differ by {rerun[0]:.4g}" if rerun else ""))
    retained, ok_kept = _retention(jobs, chain)
    if retained:
        said.append(retained)
    record = fsutil.read_json(JobDir.of(jobs, chain[0]).interrupt, {}) or {}
    head = (f"SIGKILLed after step {record.get('last_step_seen')} (drawn: {record.get('stop_at_step')}), resumed "
            f"from global_step_{from_step} as {chain_text(chain)}; steps {from_step + 1}-{max(after)} vs "
            f"{reference}: ")
    if not compared:
        said.append(f"no figure of {workload or 'this workload'} compared: nothing proves the curve")
    return _result(ok and ok_kept and compared > 0, head + "; ".join(said))


def _retention(jobs: Path, chain: list) -> tuple:
    """(evidence, passed): the chain's complete checkpoints against the
    job's max_ckpt_to_keep, honoured across the resume (ckpt_keep.py)."""
    keep = ckpt_keep.limit(JobDir.of(jobs, chain[-1]).resolved())
    if not keep:
        return "", True
    kept = [f"{job}/global_step_{step}" for job in chain for step, _ in ckpt_keep.complete(JobDir.of(jobs, job))]
    return (f"the chain keeps {len(kept)} complete checkpoint(s) ({', '.join(kept) or 'none'}), "
            f"max_ckpt_to_keep {keep}{'' if len(kept) <= keep else ': too many (verl 7395)'}"), len(kept) <= keep
