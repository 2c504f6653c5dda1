"""The pods KubeRay v1.7.0 (and Kubernetes) would create for a rendered file's
RayJob, RayCluster and CronJob, as `podman run` argument lists, for the tier
that executes them (tests/kuberay).

What KubeRay adds to the rendered pod templates is mirrored from
ray-project/kuberay v1.7.0 (commit 59d663aeec13760646da3db9c1cf8cfe883e30b7),
read and re-stated here (not copied):
- the Ray container's command: kuberay_pod_command.py (common/pod.go BuildPod);
- its environment, common/pod.go setContainerEnvVars (:1207-1324): kuberay_env below;
- token auth, common/pod.go SetContainerTokenAuthEnvVars (:386-425):
  RAY_AUTH_MODE=token and RAY_AUTH_TOKEN from the Secret KubeRay makes (here:
  a token the test makes), in every Ray container and the submitter;
- the submitter, rayjob_controller.go configureSubmitterContainer (:633-661):
  a template with its own command keeps it (K8sJobMode), plus
  PYTHONUNBUFFERED=1, RAY_DASHBOARD_ADDRESS (the head service's
  <svc>.<namespace>.svc.cluster.local:8265) and RAY_JOB_SUBMISSION_ID (spec.jobId);
- names: the RayJob's cluster is <RayJob>-<5 random chars> (a RayCluster's is
  its own name), its head service <cluster>-head-svc
  (utils.GenerateHeadServiceName, short names); the token's Secret is named
  after the cluster, key auth_token (SetContainerTokenAuthEnvVars).
A CronJob's pod is its job template's pod as is (Kubernetes adds nothing the
runbook reads).
- BuildPod's /dev/shm (pod.go:855-861): shared_memory below;
- a worker's init container wait-gcs-ready (pod.go:602-658): wait_gcs_ready
  below; the tier runs it to its end before the pod's Ray container.
Not mirrored (nothing of the runbook reads them, and podman has no
equivalent that matters here): the liveness and readiness probes
(initLivenessAndReadinessProbe, pod.go:920-929), the metrics container port
(:288-296, :688-696), the pods' labels and annotations, the RayJob's
submitter Job object around its pod, Services: each pod's /etc/hosts maps
the head Service's names (its FQDN and short name) to the head pod's address,
as cluster DNS would answer them (podman --add-host). Not a network alias:
podman's DNS server (aardvark-dns) is shared by every network on the host
and a name it loses for a moment ends a worker pod (the raylet gives up on
the GCS it cannot resolve, `ray start --block` exits); a file cannot lose it.
Kubernetes' part: a container's memory limit becomes its cgroup limit
(podman --memory; the CPU limit is Ray's num-cpus only); an nvidia.com/gpu
limit allocates no device here (no GPU on these machines): Ray counts the
--num-gpus KubeRay derived from it, as it would on a GPU node; a
PersistentVolumeClaim is the test's shared directory; an emptyDir of medium
Memory at /dev/shm is podman's --shm-size.

What happens when a Ray container ends (the kubelet's restart in place,
KubeRay's delete and replacement): kuberay_reconcile.py, by each Ray pod's
restartPolicy (restart_policy there). Before any pod, the
file's RayClusters and RayJobs go through KubeRay's own refusals
(helpers/mvp/render/kuberay_rules.py): what the operator would refuse never
becomes a pod here.

Usage: kuberay_pods.py MANIFEST.yaml --shared DIR --token-file F --network NAME --subnet-prefix 10.89.K
Prints one JSON line per pod: {"name", "role": head|worker|submitter|cronjob, "ip", "argv": [podman run args after `run`],
"init": [{"name", "argv"}, ...] (its init containers, to run to their end first)}; a head or worker pod
also has "cluster", "group" and "restartPolicy" (what kuberay_reconcile.py reads).
Every pod runs the image the manifest names (the runbook's image, built by
scripts/72_build_image.sh); a container's command and args follow the image
name, as Kubernetes runs them on an image without an ENTRYPOINT."""
import argparse
import json
import sys
from pathlib import Path

import yaml

from kuberay_pod_command import pod_command, value
from kuberay_reconcile import restart_policy

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "helpers"))
from mvp.render import kuberay_rules  # noqa: E402  (the runbook's port of KubeRay's refusals)

SUFFIX = "abcde"  # the RayJob controller's 5 random characters
HEAD_RESTART_OFF = "ray.io/disable-provisioned-head-restart"  # utils/constant.go:34


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


def shared_memory(group: dict, container: dict) -> list:
    """BuildPod (pod.go:855-861): unless rayStartParams sets plasma-directory
    or the container already mounts something at /dev/shm (addEmptyDir,
    pod.go:1548-1569), KubeRay adds an emptyDir of medium Memory there whose
    sizeLimit is the container's memory limit, else its request
    (makeEmptyDirVolume and findMemoryReqOrLimit, pod.go:1574-1592, 1615-1627):
    podman's --shm-size."""
    if "plasma-directory" in (group.get("rayStartParams") or {}):
        return []
    if any(m.get("mountPath") == "/dev/shm" for m in container.get("volumeMounts") or []):
        return []
    res = container.get("resources") or {}
    size = (res.get("limits") or {}).get("memory") or (res.get("requests") or {}).get("memory")
    if size is None:
        raise SystemExit("a Ray container without a memory limit or request: its /dev/shm is not mirrored here")
    return ["--shm-size", value(size)]


def kuberay_env(role: str, cluster: str, ns: str, pod: str, group_name: str, start_cmd: str, head_port: str,
                svc: str, crd: str) -> list:
    """setContainerEnvVars (pod.go:1207-1324), in its order, after the
    container's own env: a worker's FQ_RAY_IP and RAY_IP; every Ray pod's
    RAY_CLUSTER_NAME, RAY_CLUSTER_NAMESPACE, RAY_CLOUD_INSTANCE_ID,
    RAY_NODE_TYPE_NAME (field references Kubernetes resolves: here their
    values), KUBERAY_GEN_RAY_START_CMD, RAY_PORT, RAY_ADDRESS,
    RAY_USAGE_STATS_KUBERAY_IN_USE; the head's RAY_USAGE_STATS_EXTRA_TAGS
    (utils/constant.go:365 KUBERAY_VERSION v1.7.0); RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE."""
    env = [{"name": "FQ_RAY_IP", "value": svc}, {"name": "RAY_IP", "value": f"{cluster}-head-svc"}] if role == "worker" else []
    env += [{"name": "RAY_CLUSTER_NAME", "value": cluster}, {"name": "RAY_CLUSTER_NAMESPACE", "value": ns},
            {"name": "RAY_CLOUD_INSTANCE_ID", "value": pod}, {"name": "RAY_NODE_TYPE_NAME", "value": group_name},
            {"name": "KUBERAY_GEN_RAY_START_CMD", "value": start_cmd}, {"name": "RAY_PORT", "value": head_port},
            {"name": "RAY_ADDRESS", "value": f"{'127.0.0.1' if role == 'head' else svc}:{head_port}"},
            {"name": "RAY_USAGE_STATS_KUBERAY_IN_USE", "value": "1"}]
    if role == "head":
        env.append({"name": "RAY_USAGE_STATS_EXTRA_TAGS", "value": f"kuberay_version=v1.7.0;kuberay_crd={crd}"})
    return env + [{"name": "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE", "value": "1"}]


def wait_gcs_ready(pod: str, ip: str, network: str, container: dict, svc: str, head_port: str, env: list,
                   mounts_args: list) -> dict:
    """A worker's init container (DefaultWorkerPodTemplate, pod.go:602-658;
    ENABLE_INIT_CONTAINER_INJECTION is on unless set false, :580-585): the Ray
    container's image, own env and mounts, FQ_RAY_IP and RAY_IP
    (setInitContainerEnvVars, :1193-1205, from BuildPod :915-917), the token
    (configureTokenAuth, :354-361), 200m CPU and 256Mi; it runs `ray
    health-check` against the head's GCS every 5 s until it answers, so the
    Ray container starts only then. Here it runs in the pod's address (its
    network namespace on Kubernetes) before the pod's own container (its
    CPU limit, like every container's here, is not applied)."""
    name = f"{pod}-wait-gcs-ready"
    check = (f"until ray health-check --address {svc}:{head_port} >/dev/null 2>&1; do "
             f"echo \"$SECONDS s: waiting for the GCS at {svc}:{head_port}\"; sleep 5; done; echo 'GCS is ready.'")
    argv = ["--name", name, "--ip", ip, "--network", network, *env_args(env, {}), *mounts_args,
            "--memory", value("256Mi"), container["image"], "/bin/bash", "-c", "--", check]
    return {"name": name, "argv": argv}


def limits(container: dict) -> list:
    lim = (container.get("resources") or {}).get("limits") or {}
    out = []
    if "memory" in lim:
        out += ["--memory", value(lim["memory"])]
    return out


def ray_pods(cspec: dict, cluster: str, ns: str, shared: str, token: str, network: str, prefix: str, ip: int,
             crd: str = "RayCluster") -> list:
    """The head and worker pods of a RayCluster spec (a RayCluster's own, or a
    RayJob's rayClusterSpec, crd RayJob)."""
    svc = f"{cluster}-head-svc.{ns}.svc.cluster.local"
    head_port = str((cspec["headGroupSpec"].get("rayStartParams") or {}).get("port", "6379"))
    auth = (cspec.get("authOptions") or {}).get("mode") == "token"
    out = []
    groups = [("head", cspec["headGroupSpec"], 1, "headgroup")]
    groups += [("worker", g, g.get("replicas", 1), g["groupName"]) for g in cspec.get("workerGroupSpecs") or []]
    for role, group, replicas, group_name in groups:
        for i in range(replicas):
            pod = f"{cluster}-head" if role == "head" else f"{cluster}-{group_name}-worker-{i}"
            command, args = pod_command(group, role == "head", f"{svc}:{head_port}", False)
            tspec = group["template"]["spec"]
            container = tspec["containers"][0]
            env = kuberay_env(role, cluster, ns, pod, group_name, args[-1].split("; ", 1)[-1], head_port, svc, crd)
            # configureTokenAuth (pod.go:298-300, 702-704, 345-361).
            tokens = [{"name": "RAY_AUTH_MODE", "value": "token"}, {"name": "RAY_AUTH_TOKEN", "value": token}] if auth else []
            env += tokens
            policy = restart_policy(tspec)
            argv = ["--name", pod, "--hostname", pod, "--ip", f"{prefix}.{ip}", "--network", network,
                    *env_args((container.get("env") or []) + env, {}),
                    *mounts(tspec, container, shared), *shared_memory(group, container), *limits(container)]
            init = []
            if role == "worker":
                init_env = (container.get("env") or []) + env[:2] + tokens  # env[:2]: FQ_RAY_IP, RAY_IP
                init.append(wait_gcs_ready(pod, f"{prefix}.{ip}", network, container, svc, head_port, init_env,
                                           mounts(tspec, container, shared)))
            argv += [container["image"], *command, *args]
            out.append({"name": pod, "role": role, "ip": f"{prefix}.{ip}", "argv": argv, "init": init, "namespace": ns,
                        "cluster": cluster, "group": group_name, "restartPolicy": policy})
            ip += 1
    return out


def rayjob_pods(doc: dict, shared: str, token: str, network: str, prefix: str, ip: int) -> list:
    name, ns = doc["metadata"]["name"], doc["metadata"].get("namespace") or "default"
    spec = doc["spec"]
    cluster = f"{name}-{SUFFIX}"
    svc = f"{cluster}-head-svc.{ns}.svc.cluster.local"
    cspec = spec["rayClusterSpec"]
    auth = (cspec.get("authOptions") or {}).get("mode") == "token"
    out = ray_pods(cspec, cluster, ns, shared, token, network, prefix, ip, "RayJob")
    ip += len(out)
    sub = spec["submitterPodTemplate"]["spec"]
    container = sub["containers"][0]
    kuberay_env = [{"name": "PYTHONUNBUFFERED", "value": "1"}, {"name": "RAY_DASHBOARD_ADDRESS", "value": f"{svc}:8265"},
                   {"name": "RAY_JOB_SUBMISSION_ID", "value": spec["jobId"]}]
    if auth:
        kuberay_env += [{"name": "RAY_AUTH_MODE", "value": "token"}, {"name": "RAY_AUTH_TOKEN", "value": token}]
    pod = f"{name}-submitter"
    argv = ["--name", pod, "--hostname", pod, "--ip", f"{prefix}.{ip}", "--network", network,
            *env_args((container.get("env") or []) + kuberay_env, {}), *mounts(sub, container, shared),
            *limits(container), container["image"], *container["command"], *(container.get("args") or [])]
    out.append({"name": pod, "role": "submitter", "ip": f"{prefix}.{ip}", "argv": argv})
    return out


def cronjob_pod(doc: dict, clusters: dict, shared: str, token: str, network: str, prefix: str, ip: int) -> list:
    """The pod of one run of a batch/v1 CronJob, as Kubernetes runs it: the
    template's image, command, args, env and mounts, nothing added (Kubernetes
    names it <cronjob>-<scheduled minute>-<5 random>). A secretKeyRef may name
    only a token Secret KubeRay makes: a rendered RayCluster's, key auth_token."""
    name = doc["metadata"]["name"]
    tspec = doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    container = tspec["containers"][0]
    resolved = {}
    for item in container.get("env") or []:
        ref = (item.get("valueFrom") or {}).get("secretKeyRef")
        if ref:
            if ref.get("name") not in clusters or ref.get("key") != "auth_token" or not clusters[ref["name"]]:
                raise SystemExit(f"env {item['name']}: Secret {ref.get('name')} key {ref.get('key')} is not the token "
                                 f"KubeRay makes for a rendered RayCluster with token auth ({sorted(clusters)})")
            resolved[item["name"]] = token
    pod = f"{name}-29000000-{SUFFIX}"
    argv = ["--name", pod, "--hostname", pod, "--ip", f"{prefix}.{ip}", "--network", network,
            *env_args(container.get("env") or [], resolved), *mounts(tspec, container, shared),
            *limits(container), container["image"], *container["command"], *(container.get("args") or [])]
    return [{"name": pod, "role": "cronjob", "ip": f"{prefix}.{ip}", "argv": argv}]


def service_hosts(pods: list) -> list:
    """--add-host for every head Service of the file: its FQDN, and its short
    name that a pod of the same namespace resolves through its DNS search
    path, at the head pod's address."""
    out = []
    for pod in pods:
        if pod["role"] == "head":
            svc = f"{pod['name']}-svc"
            out += ["--add-host", f"{svc}.{pod['namespace']}.svc.cluster.local:{pod['ip']}",
                    "--add-host", f"{svc}:{pod['ip']}"]
    return out


def refused(doc: dict) -> str:
    """Why KubeRay v1.7.0 would refuse a RayCluster or RayJob (kuberay_rules),
    or why this imitation does not take it; "" when neither."""
    try:
        kuberay_rules.check(doc)
    except kuberay_rules.Refused as e:
        return f"KubeRay would refuse it: {e}"
    if HEAD_RESTART_OFF in ((doc.get("metadata") or {}).get("annotations") or {}):
        return f"annotation {HEAD_RESTART_OFF}: the head it keeps down is not imitated (kuberay_reconcile.py)"
    return ""


def pods(docs: list, shared: str, token: str, network: str, prefix: str) -> list:
    """Every pod of a rendered file's RayJobs, RayClusters and CronJobs (addresses from .2 on, in file order)."""
    for doc in docs:
        why = refused(doc) if doc["kind"] in ("RayCluster", "RayJob") else ""
        if why:
            raise SystemExit(f"ERROR: {doc['kind']} {doc['metadata'].get('name')}: {why}; no pod is started")
    out = []
    clusters = {d["metadata"]["name"]: (d["spec"].get("authOptions") or {}).get("mode") == "token"
                for d in docs if d["kind"] == "RayCluster"}
    for doc in docs:
        ip = 2 + len(out)
        if doc["kind"] == "RayJob":
            out += rayjob_pods(doc, shared, token, network, prefix, ip)
        elif doc["kind"] == "RayCluster":
            out += ray_pods(doc["spec"], doc["metadata"]["name"], doc["metadata"].get("namespace") or "default",
                            shared, token, network, prefix, ip)
        elif doc["kind"] == "CronJob":
            out += cronjob_pod(doc, clusters, shared, token, network, prefix, ip)
    hosts = service_hosts(out)
    for pod in out:
        pod.pop("namespace", None)
        for p in [pod, *pod.get("init", [])]:
            p["argv"][:0] = hosts
    return out


def main(argv: list) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("manifest")
    p.add_argument("--shared", required=True)
    p.add_argument("--network", required=True)
    p.add_argument("--token-file", required=True)
    p.add_argument("--subnet-prefix", required=True)
    a = p.parse_args(argv)
    docs = [d for d in yaml.safe_load_all(Path(a.manifest).read_text(encoding="utf-8")) if d]
    token = Path(a.token_file).read_text().strip()
    for pod in pods(docs, a.shared, token, a.network, a.subnet_prefix):
        print(json.dumps(pod))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
