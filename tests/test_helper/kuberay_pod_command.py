"""The Ray container's command as KubeRay v1.7.0 builds it, rebuilt from the
head and worker groups of rendered RayClusters, RayJobs (rayClusterSpec) and
RayCronJobs (jobTemplate.rayClusterSpec).

It mirrors ray-project/kuberay v1.7.0 (commit 59d663aeec13760646da3db9c1cf8cfe883e30b7),
ray-operator/controllers/ray/common/pod.go, read and re-stated here (not copied):
- updateRayStartParamsResources (pod.go:1649-1685): the group's `resources`
  field: cpu, memory and *gpu keys become num-cpus, memory and num-gpus; the
  rest become rayStartParams["resources"] = "'" + Go's json.Marshal of them + "'".
- updateRayStartParamsLabels (pod.go:1630-1646): the group's `labels` field
  becomes rayStartParams["labels"] = "k=v,k=v" (sorted keys).
- setMissingRayStartParams (pod.go:1345-1388): a worker gets address
  FQDN:port; the head dashboard-host 0.0.0.0; both metrics-export-port 8080,
  block "true", dashboard-agent-listen-port 52365 unless given.
- generateRayStartCommand and addWellKnownAcceleratorResources
  (pod.go:1390-1479): num-cpus from the container's cpu limit (else request),
  memory from its memory limit, num-gpus from the first GPU limit (sorted keys;
  utils/resources.go:8-17 IsGPUResourceKey: a name ending in "gpu", like
  nvidia.com/gpu, or an NVIDIA MIG slice) unless rayStartParams (or the
  group's resources map) already gave it, all as Kubernetes quantities'
  Value() (rounded up); getResourcesMap (pod.go:1494-1507) must read
  rayStartParams' resources as JSON numbers first, else no GPU is added;
  "ray start --head %s" or "ray start %s". This is the nvidia.com/gpu path a
  GPU night takes: the worker group's limit becomes --num-gpus.
- convertParamMap (pod.go:1518-1544): sorted keys; "true" gives " --key ",
  "false" nothing (but for log-color, include-dashboard, include-log-monitor);
  every other value is written VERBATIM as " --key=value ": no shell quoting.
- BuildPod (pod.go:877-912) and utils.GetContainerCommand (utils/util.go:1005):
  args = ["ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; <ray start ...>"]
  (after the container's own command and args, " && "-joined, when it has
  some), command = ["/bin/bash", "-c", "--"]; a container whose command already
  holds "ray start", or a RayCluster annotated ray.io/overwrite-container-cmd,
  keeps its own.
The order is the operator's: DefaultHeadPodTemplate / DefaultWorkerPodTemplate
(pod.go:228-238, 663-683) update the params from the group's resources and
labels and fill the missing ones, then BuildPod generates the command.
Only what those functions do to the runbook's groups is mirrored: a group using
autoscaling, GCS fault tolerance or custom accelerators (TPU, Neuron) is
refused here rather than rebuilt wrongly; Kubernetes' own $(VAR) expansion of
args is not applied (the rendered groups have none).

Usage: kuberay_pod_command.py FILE.yaml [--head-address HOST:PORT]
Prints one JSON line per Ray group: {"resource": "KIND/NAME", "group":
"headgroup" or the worker group's name, "command": [...], "args": [...]}.
--head-address replaces the worker's address (KubeRay: the head service's
FQDN and the head's port)."""
import json
import math
import re
import sys
from decimal import Decimal
from pathlib import Path

import yaml

DEFAULT_GCS_PORT = "6379"  # utils/constant.go:106
DEFAULT_METRICS_PORT = "8080"  # utils/constant.go:108
DEFAULT_DASHBOARD_AGENT_LISTEN_PORT = "52365"  # utils/constant.go:109
BOOLEAN_VALUED = ("log-color", "include-dashboard", "include-log-monitor")
CUSTOM_ACCELERATORS = ("aws.amazon.com/neuroncore", "google.com/tpu")

_SUFFIX = {"": 1, "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "k": 10**3, "M": 10**6,
           "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))(?:[eE]([+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?")


def quantity(text) -> Decimal:
    """A Kubernetes quantity (resource.ParseQuantity) as an exact number."""
    m = _QUANTITY.fullmatch(str(text).strip())
    if not m:
        raise ValueError(f"'{text}' is not a Kubernetes quantity")
    number = Decimal(m.group(1))
    return number * (Decimal(10) ** int(m.group(2)) if m.group(2) else Decimal(_SUFFIX[m.group(3) or ""]))


def value(text) -> str:
    """Quantity.Value(): rounded up to a whole number."""
    return str(math.ceil(quantity(text)))


def go_float(number: float) -> str:
    """A float64 as Go's encoding/json writes it, for the values a group uses."""
    if not (number == 0 or 1e-6 <= abs(number) < 1e21):
        raise ValueError(f"{number}: Go writes it in exponent form; not mirrored here")
    return format(Decimal(repr(number)).normalize(), "f")


def update_resources(params: dict, group_resources: dict) -> None:
    custom = {}
    for name, text in (group_resources or {}).items():
        try:
            q = quantity(text)
        except ValueError:
            continue  # KubeRay logs and skips a quantity it cannot parse
        low = name.lower()
        if low == "cpu":
            params["num-cpus"] = value(text)
        elif low == "memory":
            params["memory"] = value(text)
        elif is_gpu(low):
            params["num-gpus"] = value(text)
        else:
            custom[name] = float(q)
    if custom:
        body = ",".join(f"{json.dumps(k)}:{go_float(custom[k])}" for k in sorted(custom))
        params["resources"] = "'{" + body + "}'"


def is_gpu(key: str) -> bool:
    """utils/resources.go:8 IsGPUResourceKey."""
    return key.endswith("gpu") or re.search(r"nvidia\.com/mig-\d+g\.\d+gb$", key) is not None


def update_labels(params: dict, labels: dict) -> None:
    if labels:
        params["labels"] = ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def set_missing(params: dict, head: bool, address: str) -> None:
    if not head:
        params.setdefault("address", address)
    else:
        params.setdefault("dashboard-host", "0.0.0.0")
    params.setdefault("metrics-export-port", DEFAULT_METRICS_PORT)
    params["block"] = "true"
    params.setdefault("dashboard-agent-listen-port", DEFAULT_DASHBOARD_AGENT_LISTEN_PORT)


def ray_start(params: dict, head: bool, container: dict) -> str:
    limits = (container.get("resources") or {}).get("limits") or {}
    requests = (container.get("resources") or {}).get("requests") or {}
    if "num-cpus" not in params:
        for source in (limits, requests):
            if source.get("cpu") is not None and quantity(source["cpu"]) != 0:
                params["num-cpus"] = value(source["cpu"])
                break
    if "memory" not in params and limits.get("memory") is not None and quantity(limits["memory"]) != 0:
        params["memory"] = value(limits["memory"])
    if limits:
        if any(k in limits for k in CUSTOM_ACCELERATORS):
            raise ValueError("a custom accelerator limit (TPU, Neuron): not mirrored here")
        if resources_map(params) is not None:
            for key in sorted(limits):
                if "num-gpus" not in params and is_gpu(key) and quantity(limits[key]) != 0:
                    params["num-gpus"] = value(limits[key])
    return ("ray start --head %s" if head else "ray start %s") % convert_params(params)


def resources_map(params: dict):
    """getResourcesMap (pod.go:1494-1507): rayStartParams' resources, its
    quotes and spaces trimmed, as JSON of numbers; None where Go's
    json.Unmarshal into map[string]float64 fails, and then
    addWellKnownAcceleratorResources stops before any GPU (pod.go:1437-1440)."""
    if "resources" not in params:
        return {}
    try:
        found = json.loads(params["resources"].strip("'\"` "))
    except ValueError:
        return None
    ok = isinstance(found, dict) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in found.values())
    return found if ok else None


def convert_params(params: dict) -> str:
    flags = ""
    for key in sorted(params):
        arg = params[key]
        if arg.lower() in ("true", "false") and key not in BOOLEAN_VALUED:
            if arg.lower() == "true":
                flags += f" --{key} "
        else:
            flags += f" --{key}={arg} "
    return flags


def pod_command(group: dict, head: bool, address: str, overwrite: bool) -> tuple:
    params = {k: str(v) for k, v in (group.get("rayStartParams") or {}).items()}
    update_resources(params, group.get("resources"))
    update_labels(params, group.get("labels"))
    set_missing(params, head, address)
    container = group["template"]["spec"]["containers"][0]
    own = "".join(f" {w} " for w in (container.get("command") or []) + (container.get("args") or []))
    generated = "ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; " + ray_start(params, head, container)
    if overwrite or "ray start" in own:
        return container.get("command") or [], container.get("args") or []
    return ["/bin/bash", "-c", "--"], [f"{own} && {generated}" if own else generated]


def cluster_specs(doc: dict):
    kind, spec = doc.get("kind"), doc.get("spec") or {}
    if kind == "RayCluster":
        yield doc["metadata"]["name"], spec
    elif kind == "RayJob":
        # The RayJob controller names its cluster <RayJob name>-<random>.
        yield doc["metadata"]["name"] + "-xxxxx", spec["rayClusterSpec"]
    elif kind == "RayCronJob":
        yield doc["metadata"]["name"] + "-xxxxx-xxxxx", spec["jobTemplate"]["rayClusterSpec"]


def main(argv: list) -> int:
    path, head_address = argv[0], None
    if argv[1:2] == ["--head-address"]:
        head_address = argv[2]
    for doc in yaml.safe_load_all(Path(path).read_text(encoding="utf-8")):
        if not doc:
            continue
        for cluster, spec in cluster_specs(doc):
            if spec.get("enableInTreeAutoscaling") or spec.get("gcsFaultToleranceOptions"):
                raise SystemExit(f"{doc['kind']}/{doc['metadata']['name']}: autoscaling or GCS fault "
                                 "tolerance: not mirrored here")
            namespace = doc["metadata"].get("namespace") or "default"
            head_group = spec["headGroupSpec"]
            port = str((head_group.get("rayStartParams") or {}).get("port", DEFAULT_GCS_PORT))
            address = head_address or f"{cluster}-head-svc.{namespace}.svc.cluster.local:{port}"
            overwrite = str((doc["metadata"].get("annotations") or {})
                            .get("ray.io/overwrite-container-cmd", "")).lower() == "true"
            groups = [("headgroup", head_group, True)]
            groups += [(g["groupName"], g, False) for g in spec.get("workerGroupSpecs") or []]
            for name, group, head in groups:
                command, args = pod_command(group, head, address, overwrite)
                print(json.dumps({"resource": f"{doc['kind']}/{doc['metadata']['name']}", "group": name,
                                  "command": command, "args": args}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
