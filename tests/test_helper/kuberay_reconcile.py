"""What Kubernetes and KubeRay v1.7.0 do when the Ray container of a
RayCluster's pod ends, for the KubeRay tier's podman pods (tests/kuberay):
a loop over the tier's pods (main below) plays both the kubelet's restart of
a container and the RayCluster controller's pod reconcile.

Read in ray-project/kuberay v1.7.0 (commit 59d663aeec13760646da3db9c1cf8cfe883e30b7)
and re-stated here, not copied; RC is
ray-operator/controllers/ray/raycluster_controller.go:
- restartPolicy: KubeRay keeps the group template's (it sets Never only with
  autoscaler v2, common/pod.go:280 and :699, whose clusters kuberay_pods.py
  refuses); left unset, Kubernetes makes it Always (the API's pod defaults);
  any value but Always, OnFailure and Never the API server refuses:
  restart_policy. The runbook's Ray groups set none (render_kuberay.py
  cluster_spec), so theirs is Always; the Never at render_kuberay.py:269
  and :396 is the RayJob submitter's and the nightly CronJob's pod, which
  are not the RayCluster's.
- the kubelet: Always restarts an ended container in its pod, OnFailure one
  that ended non-zero; the pod keeps its name and address and stays
  Running. Otherwise the container stays ended, and a pod whose only
  container ended for good is Failed (non-zero exit) or Succeeded (0)
  (kubelet getPhase, which shouldDeletePod cites, RC:1513-1514): pod_phase.
  The restart is a new container from the image in the same pod (same
  address and volumes; the init containers do not run again), so nothing
  the ended one wrote outside a volume is left: here the loop removes the
  ended container and runs the pod's argv again (same name and address),
  not podman's --restart, which would start the same container, its files
  as they were (a restarted worker's Ray joins the cluster's session
  directory, and would find and serve the ended one's logs). The kubelet
  restarts the first time at once and then backs off 10 s, doubling up to
  5 min (CrashLoopBackOff, as Kubernetes' pod lifecycle page says; the
  kubelet's own source was not read for this): restart_delay (the
  back-off's reset after 10 min running is not imitated). The ended
  container's log is kept, as `kubectl logs --previous` shows the last one.
- shouldDeletePod (RC:1512-1560): a Failed or Succeeded pod is deleted
  (:1517-1524); a Running pod whose Ray container terminated is deleted when
  its restartPolicy is Never (:1525-1532), and left alone otherwise, its
  container restarting (:1533-1539): should_delete. reconcilePods applies it
  to the head pod (:1000-1023) and to each worker pod (:1104-1126).
- the replacement: the reconcile after a delete (which ends the pass with an
  error, so it runs again: :1023, :1127-1131) finds no head pod and creates
  one (:1025-1055, createHeadPod :1636), or fewer worker pods than the
  group's replicas and creates the difference (:1167, :1183-1215,
  createWorkerPod :1668), each built from the group's template as the first
  was: replacement.
- names: buildHeadPod names the head utils.PodName(<cluster>, head,
  GenerateName unless ENABLE_DETERMINISTIC_HEAD_POD_NAME) (RC:1719,
  utils/util.go:201-218), buildWorkerPod a worker PodName(<cluster>-<group>,
  worker, GenerateName) (RC:1767): the API server appends 5 random
  characters (apimachinery's name generator, alphabet
  bcdfghjklmnpqrstvwxz2456789).

How faithful names and addresses are: kuberay_pods.py gives the first pods
fixed names (<cluster>-head, <cluster>-<group>-worker-<i>) and addresses
from .2 in file order, so that the tests can name them; a replacement gets
KubeRay's form, <cluster>-head-<5> or <cluster>-<group>-worker-<5>, 5 random
characters of that alphabet: a new name, as on Kubernetes. A replacement
worker gets a new address, the one after the highest any pod of the tier's
files or this loop used (a pod network hands a new pod a free address; the
old one's is not what it gets). A replacement head keeps the head's
address: the head Service's names are in every pod's /etc/hosts at it
(kuberay_pods.service_hosts), and a running pod's file cannot follow a new
one; on Kubernetes the Service keeps its ClusterIP too, but the new head pod
has a new IP, which Ray reports: here it reports the old one.
Not imitated: a pod removed by anything but this loop is not recreated (the
tier's teardown stops the loop first); the head that a sidecar-mode RayJob's
cluster does not recreate (ray.io/disable-provisioned-head-restart,
RC:1026-1044, 1458-1460), which kuberay_pods.py refuses; suspension, the
Recreate upgrade strategy, scale expectations and multi-host indexing, which
the rendered clusters do not use.

Usage: kuberay_reconcile.py LIVE.jsonl --prefix 10.89.K [--taken PODS.jsonl]...
LIVE.jsonl holds the head and worker pods (kuberay_pods.py's lines) to keep;
every 2 s the loop reads their containers' states, restarts in place those
the kubelet would (restartCount counts them), deletes the pods that
should_delete says and creates their replacements, rewriting LIVE.jsonl,
appending each new pod to LIVE.jsonl.created before starting it, a line per
decision to LIVE.jsonl.log, and each ended container's log to
LIVE.jsonl.previous/. --taken: files whose pods' addresses are taken too
(the submitter's, the CronJob's)."""
import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

POLICIES = ("Always", "OnFailure", "Never")
ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand
RC = "raycluster_controller.go"  # ray-operator/controllers/ray/, KubeRay v1.7.0


def restart_policy(template_spec: dict) -> str:
    """The pod's restartPolicy: the template's, Always when unset; the API
    server refuses any other value."""
    policy = template_spec.get("restartPolicy") or "Always"
    if policy not in POLICIES:
        raise SystemExit(f"ERROR: restartPolicy {policy!r}: the API server takes only {', '.join(POLICIES)}")
    return policy


def restart_delay(restarts: int) -> int:
    """Seconds the kubelet waits before restarting a container that ended
    `restarts` times before: none the first time, then 10 doubling to 300."""
    return 0 if restarts == 0 else min(10 * 2 ** (restarts - 1), 300)


def pod_phase(policy: str, state: str, exit_code: int) -> str:
    """The pod's phase with one container in `state` (podman's word): Running
    while it runs or will restart, else Failed or Succeeded by its exit."""
    if state != "exited" or policy == "Always" or (policy == "OnFailure" and exit_code != 0):
        return "Running"
    return "Succeeded" if exit_code == 0 else "Failed"


def should_delete(pod: dict, state: str, exit_code: int):
    """shouldDeletePod: (delete, why) for a pod whose container is in `state`."""
    policy = pod["restartPolicy"]
    if state == "exited" and policy == "Never":
        return True, (f"Ray container terminated, restartPolicy Never: deleted ({RC}:1525-1532; "
                      f"{RC}:1517-1524 once the kubelet calls the pod {pod_phase(policy, state, exit_code)})")
    phase = pod_phase(policy, state, exit_code)
    if phase in ("Failed", "Succeeded"):
        return True, f"pod {phase} (restartPolicy {policy}, exit {exit_code}): a terminal phase, deleted ({RC}:1517-1524)"
    if state == "exited":
        return False, f"Ray container terminated, restartPolicy {policy}: the kubelet restarts it, kept ({RC}:1533-1539)"
    return False, ""


def next_ip(prefix: str, taken: set) -> str:
    """The address after the highest one taken in the pod network."""
    last = max([int(ip.rsplit(".", 1)[1]) for ip in taken if ip.startswith(prefix + ".")] or [1])
    if last >= 254:
        raise SystemExit(f"ERROR: no address left in {prefix}.0/24 for a replacement pod")
    return f"{prefix}.{last + 1}"


def new_name(pod: dict, rng: random.Random) -> str:
    """buildHeadPod's or buildWorkerPod's GenerateName plus 5 random characters."""
    stem = f"{pod['cluster']}-head" if pod["role"] == "head" else f"{pod['cluster']}-{pod['group']}-worker"
    return f"{stem}-{''.join(rng.choice(ALPHABET) for _ in range(5))}"


def renamed(argv: list, old: str, new: str, ip: str) -> list:
    """A container's argv with the pod's name, hostname, RAY_CLOUD_INSTANCE_ID,
    init container name and address those of the new pod."""
    out = []
    for i, arg in enumerate(argv):
        if i and argv[i - 1] == "--ip":
            arg = ip
        elif arg in (old, f"{old}-wait-gcs-ready"):
            arg = new + arg[len(old):]
        elif arg == f"RAY_CLOUD_INSTANCE_ID={old}":
            arg = f"RAY_CLOUD_INSTANCE_ID={new}"
        out.append(arg)
    return out


def replacement(pod: dict, prefix: str, taken: set, rng: random.Random) -> dict:
    """The pod the next reconcile creates for a deleted one of the same group."""
    name = new_name(pod, rng)
    ip = pod["ip"] if pod["role"] == "head" else next_ip(prefix, taken)
    new = dict(pod, name=name, ip=ip, replaces=pod["name"], argv=renamed(pod["argv"], pod["name"], name, ip),
               restartCount=0)
    new["init"] = [{"name": name + i["name"][len(pod["name"]):], "argv": renamed(i["argv"], pod["name"], name, ip)}
                   for i in pod.get("init", [])]
    return new


def container_states():
    """name -> (state, exit code) of every container podman knows; None when
    podman could not say (the pass is skipped, as a reconcile that fails to
    list pods is retried)."""
    ps = subprocess.run(["podman", "ps", "-a", "--format", "json"], capture_output=True, text=True)
    try:
        found = json.loads(ps.stdout or "[]") if ps.returncode == 0 else None
    except ValueError:
        found = None
    if found is None:
        return None
    return {n: (c.get("State", ""), int(c.get("ExitCode") or 0)) for c in found for n in c.get("Names") or []}


def keep_log(live_path: Path, name: str, which) -> None:
    """The ended container's log, as `kubectl logs --previous` keeps it."""
    Path(f"{live_path}.previous").mkdir(exist_ok=True)
    with open(f"{live_path}.previous/{name}.{which}.log", "w", encoding="utf-8") as f:
        subprocess.run(["podman", "logs", name], stdout=f, stderr=subprocess.STDOUT)


def restart_in_place(pod: dict, live_path: Path, busy: set, log) -> None:
    """The kubelet's restart: after its back-off, a new container of the
    pod's argv (name, address, volumes) in place of the ended one."""
    time.sleep(restart_delay(pod["restartCount"] - 1))
    keep_log(live_path, pod["name"], pod["restartCount"] - 1)
    subprocess.run(["podman", "rm", "-f", "-t", "5", pod["name"]], capture_output=True)
    if subprocess.run(["podman", "run", "-d", *pod["argv"]], capture_output=True).returncode:
        log(f"pod {pod['name']}: its container did not start again")
    busy.discard(pod["name"])


def start_pod(pod: dict, log) -> None:
    """As the kubelet starts a pod: its init containers to a good end (180 s
    each), then its container."""
    for init in pod.get("init", []):
        if subprocess.run(["timeout", "180", "podman", "run", "--rm", *init["argv"]], capture_output=True).returncode:
            log(f"pod {pod['name']}: init container {init['name']} did not end well")
            return
    if subprocess.run(["podman", "run", "-d", *pod["argv"]], capture_output=True).returncode:
        log(f"pod {pod['name']}: its container did not start")


def reconcile_once(live: list, states: dict, prefix: str, taken: set, rng: random.Random, log, busy=()):
    """One pass: (the pods as they will be, those to create in place of a
    deleted one, those whose container restarts in place). A pod in `busy`
    (its restart under way) or not started yet is left as it is."""
    kept, created, restarted = [], [], []
    for pod in live:
        if pod["name"] not in states or pod["name"] in busy:
            kept.append(pod)  # not started yet (its init containers run), or restarting
            continue
        state, code = states[pod["name"]]
        delete, why = should_delete(pod, state, code)
        if not delete:
            if state == "exited":  # the kubelet's restart in place
                pod = dict(pod, restartCount=pod.get("restartCount", 0) + 1)
                log(f"{pod['role']} pod {pod['name']} (exit {code}): {why}: restart {pod['restartCount']} in place")
                restarted.append(pod)
            kept.append(pod)
            continue
        new = replacement(pod, prefix, taken, rng)
        taken.add(new["ip"])
        where = "1025-1055" if pod["role"] == "head" else "1167-1215"
        log(f"{pod['role']} pod {pod['name']} ({state}, exit {code}): {why}; "
            f"created {new['name']} at {new['ip']} in its place ({RC}:{where})")
        kept.append(new)
        created.append(new)
    return kept, created, restarted


def write_lines(path: Path, pods: list, mode: str = "w") -> None:
    tmp = path.with_name(path.name + ".tmp") if mode == "w" else path
    with open(tmp, mode, encoding="utf-8") as f:
        f.writelines(json.dumps(p) + "\n" for p in pods)
    if mode == "w":
        os.replace(tmp, path)


def act(live_path: Path, live: list, created: list, restarted: list, busy: set, log) -> None:
    """Does what a pass decided: a deleted pod's log kept, the pod removed
    and its replacement started (init containers first); a restart in
    place; the pods as they are now written to LIVE.jsonl."""
    for pod in created:
        write_lines(Path(f"{live_path}.created"), [pod], "a")
        old = pod["replaces"]
        keep_log(live_path, old, "deleted")
        subprocess.run(["podman", "rm", "-f", "-t", "5", old], capture_output=True)
        threading.Thread(target=start_pod, args=(pod, log), daemon=True).start()
    for pod in restarted:
        busy.add(pod["name"])
        threading.Thread(target=restart_in_place, args=(pod, live_path, busy, log), daemon=True).start()
    if created or restarted:
        write_lines(live_path, live)


def read_lines(path) -> list:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line]


def main(argv: list) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("live")
    p.add_argument("--prefix", required=True)
    p.add_argument("--taken", action="append", default=[])
    a = p.parse_args(argv)
    live_path = Path(a.live)
    live = read_lines(live_path)
    taken = {pod["ip"] for f in [live_path, *a.taken] for pod in read_lines(f)}
    rng = random.Random()

    def log(line: str) -> None:
        with open(f"{live_path}.log", "a", encoding="utf-8") as f:
            f.write(f"{time.strftime('%H:%M:%S')} {line}\n")

    busy = set()
    while True:
        states = container_states()
        if states is not None:
            live, created, restarted = reconcile_once(live, states, a.prefix, taken, rng, log, busy)
            act(live_path, live, created, restarted, busy, log)
        time.sleep(2)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
