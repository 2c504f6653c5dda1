"""The pods KubeRay v1.7.0 would create for a rendered RayJob, as `podman run`
argument lists, for the tier that executes them (tests/kuberay).

What KubeRay adds to the rendered pod templates is mirrored from
ray-project/kuberay v1.7.0 (commit 59d663aeec13760646da3db9c1cf8cfe883e30b7),
read and re-stated here (not copied):
- the Ray container's command: kuberay_pod_command.py (common/pod.go BuildPod);
- its environment, common/pod.go setContainerEnvVars (:1207-1330): a worker
  gets FQ_RAY_IP (the head service's FQDN) and RAY_IP; every pod
  RAY_CLUSTER_NAME, RAY_CLUSTER_NAMESPACE, RAY_CLOUD_INSTANCE_ID (the pod's
  name), RAY_NODE_TYPE_NAME (the group), KUBERAY_GEN_RAY_START_CMD, RAY_PORT,
  RAY_ADDRESS (head 127.0.0.1:port, worker FQDN:port),
  RAY_USAGE_STATS_KUBERAY_IN_USE=1, RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE=1;
- token auth, common/pod.go SetContainerTokenAuthEnvVars (:386-425):
  RAY_AUTH_MODE=token and RAY_AUTH_TOKEN from the Secret KubeRay makes (here:
  a token the test makes), in every Ray container and the submitter;
- the submitter, rayjob_controller.go configureSubmitterContainer (:633-661):
  a template with its own command keeps it (K8sJobMode), plus
  PYTHONUNBUFFERED=1, RAY_DASHBOARD_ADDRESS (the head service's
  <svc>.<namespace>.svc.cluster.local:8265) and RAY_JOB_SUBMISSION_ID (spec.jobId);
- names: the RayJob's cluster is <RayJob>-<5 random chars>, its head service
  <cluster>-head-svc (utils.GenerateHeadServiceName, short names).
Kubernetes' part: a container's limits become the container's cgroup limits
(podman --cpus/--memory); a PersistentVolumeClaim is the test's shared
directory; an emptyDir of medium Memory at /dev/shm is podman's --shm-size.

Usage: kuberay_pods.py RAYJOB.yaml --shared DIR --token-file F --network NAME --subnet-prefix 10.89.K
Prints one JSON line per pod: {"name", "role": head|worker|submitter, "ip", "argv": [podman run args after `run`]}.
Every pod runs the image the manifest names (the runbook's image, built by
scripts/72_build_image.sh); a container's command and args follow the image
name, as Kubernetes runs them on an image without an ENTRYPOINT."""
import argparse
import json
import sys
from pathlib import Path

import yaml

from kuberay_pod_command import pod_command, value

SUFFIX = "abcde"  # the RayJob controller's 5 random characters


def env_args(env: list, resolved: dict) -> list:
    """podman --env for a container's env list (valueFrom resolved by name)."""
    out = []
    for item in env:
        name = item["name"]
        v = item.get("value", resolved.get(name))
        if v is None:
            raise SystemExit(f"env {name}: valueFrom not mirrored here")
        out += ["--env", f"{name}={v}"]
    return out


def mounts(template_spec: dict, container: dict, shared: str) -> list:
    volumes = {v["name"]: v for v in template_spec.get("volumes") or []}
    out = []
    for m in container.get("volumeMounts") or []:
        vol = volumes[m["name"]]
        if "persistentVolumeClaim" in vol:
            out += ["--volume", f"{shared}:{m['mountPath']}"]
        elif (vol.get("emptyDir") or {}).get("medium") == "Memory" and m["mountPath"] == "/dev/shm":
            out += ["--shm-size", str(value(vol["emptyDir"].get("sizeLimit", "1Gi")))]
        else:
            raise SystemExit(f"volume {m['name']}: not mirrored here")
    return out


def limits(container: dict) -> list:
    lim = (container.get("resources") or {}).get("limits") or {}
    out = []
    if "memory" in lim:
        out += ["--memory", value(lim["memory"])]
    return out


def pods(doc: dict, shared: str, token: str, network: str, prefix: str) -> list:
    name, ns = doc["metadata"]["name"], doc["metadata"].get("namespace") or "default"
    spec = doc["spec"]
    cluster = f"{name}-{SUFFIX}"
    svc = f"{cluster}-head-svc.{ns}.svc.cluster.local"
    cspec = spec["rayClusterSpec"]
    head_port = str((cspec["headGroupSpec"].get("rayStartParams") or {}).get("port", "6379"))
    auth = (cspec.get("authOptions") or {}).get("mode") == "token"
    image = ["--network", network]
    out = []
    groups = [("head", cspec["headGroupSpec"], 1, "headgroup")]
    groups += [("worker", g, g.get("replicas", 1), g["groupName"]) for g in cspec.get("workerGroupSpecs") or []]
    ip = 2
    for role, group, replicas, group_name in groups:
        for i in range(replicas):
            pod = f"{cluster}-head" if role == "head" else f"{cluster}-{group_name}-worker-{i}"
            command, args = pod_command(group, role == "head", f"{svc}:{head_port}", False)
            tspec = group["template"]["spec"]
            container = tspec["containers"][0]
            kuberay_env = [{"name": "RAY_CLUSTER_NAME", "value": cluster}, {"name": "RAY_CLUSTER_NAMESPACE", "value": ns},
                           {"name": "RAY_CLOUD_INSTANCE_ID", "value": pod}, {"name": "RAY_NODE_TYPE_NAME", "value": group_name},
                           {"name": "KUBERAY_GEN_RAY_START_CMD", "value": args[-1].split("; ", 1)[-1]},
                           {"name": "RAY_PORT", "value": head_port},
                           {"name": "RAY_ADDRESS", "value": f"{'127.0.0.1' if role == 'head' else svc}:{head_port}"},
                           {"name": "RAY_USAGE_STATS_KUBERAY_IN_USE", "value": "1"},
                           {"name": "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE", "value": "1"}]
            if role == "worker":
                kuberay_env[:0] = [{"name": "FQ_RAY_IP", "value": svc}, {"name": "RAY_IP", "value": f"{cluster}-head-svc"}]
            if auth:
                kuberay_env += [{"name": "RAY_AUTH_MODE", "value": "token"}, {"name": "RAY_AUTH_TOKEN", "value": token}]
            argv = ["--name", pod, "--hostname", pod, "--ip", f"{prefix}.{ip}", *image,
                    *env_args((container.get("env") or []) + kuberay_env, {}), *mounts(tspec, container, shared),
                    *limits(container)]
            if role == "head":
                argv += ["--network-alias", svc]
            argv += [container["image"], *command, *args]
            out.append({"name": pod, "role": role, "ip": f"{prefix}.{ip}", "argv": argv})
            ip += 1
    sub = spec["submitterPodTemplate"]["spec"]
    container = sub["containers"][0]
    kuberay_env = [{"name": "PYTHONUNBUFFERED", "value": "1"}, {"name": "RAY_DASHBOARD_ADDRESS", "value": f"{svc}:8265"},
                   {"name": "RAY_JOB_SUBMISSION_ID", "value": spec["jobId"]}]
    if auth:
        kuberay_env += [{"name": "RAY_AUTH_MODE", "value": "token"}, {"name": "RAY_AUTH_TOKEN", "value": token}]
    pod = f"{name}-submitter"
    argv = ["--name", pod, "--hostname", pod, "--ip", f"{prefix}.{ip}", *image,
            *env_args((container.get("env") or []) + kuberay_env, {}), *mounts(sub, container, shared), *limits(container),
            container["image"], *container["command"], *(container.get("args") or [])]
    out.append({"name": pod, "role": "submitter", "ip": f"{prefix}.{ip}", "argv": argv})
    return out


def main(argv: list) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("rayjob")
    p.add_argument("--shared", required=True)
    p.add_argument("--network", required=True)
    p.add_argument("--token-file", required=True)
    p.add_argument("--subnet-prefix", required=True)
    a = p.parse_args(argv)
    docs = [d for d in yaml.safe_load_all(Path(a.rayjob).read_text(encoding="utf-8")) if d and d["kind"] == "RayJob"]
    token = Path(a.token_file).read_text().strip()
    for pod in pods(docs[0], a.shared, token, a.network, a.subnet_prefix):
        print(json.dumps(pod))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
