"""KubeRay v1.7.0's own refusals of a RayCluster and a RayJob, ported (re-stated
in Python, not copied) from ray-project/kuberay at tag v1.7.0, commit
59d663aeec13760646da3db9c1cf8cfe883e30b7, so that 71 refuses in one line what
the operator would refuse on the cluster (it marks the resource invalid,
records an event and never starts a pod).

Where the operator runs them: the RayCluster controller calls
ValidateRayClusterMetadata, ValidateRayClusterSpec, ValidateRayClusterUpgradeOptions
and ValidateRayClusterStatus (raycluster_controller.go:165-217); the RayJob
controller ValidateRayJobMetadata, ValidateRayJobSpec (which runs
ValidateRayClusterSpec on its rayClusterSpec) and ValidateRayJobStatus
(rayjob_controller.go:464-473), and then the RayCluster it makes, named
<RayJob>-<5 random> and labelled ray.io/originated-from-crd=RayJob
(rayjob_controller.go:997-1018, utils/util.go:369-371), goes through the
RayCluster controller's. The optional webhook adds unique worker group names
(pkg/webhooks/v1/raycluster_webhook.go:69-79).

Every rule is one function under @rule(citation): the file and lines of
v1.7.0 it ports (V = ray-operator/controllers/ray/utils/validation.go). A
feature gate is taken at its default (pkg/features/features.go:106-116).
Fields whose rules are not ported (autoscaling, GCS fault tolerance, deletion
strategies) are refused as such by `unported`: the renderer never writes
them, and a check that let them through would claim more than it knows."""
import re

import yaml

VERSION = (1, 7, 0)
COMMIT = "59d663aeec13760646da3db9c1cf8cfe883e30b7"
# The operator releases whose own rules these are. v1.7.1 is v1.7.0 with its
# samples fixed (#5175, the cherry-pick of #5154 onto release-1.7: files under
# ray-operator/config/samples/ only) and its version bumped (#5318): no
# validation, controller, webhook or CRD file changed (docs/versions.md).
SERVES = ((1, 7, 0), (1, 7, 1))
V = "validation.go"  # ray-operator/controllers/ray/utils/validation.go
MAX_CLUSTER_NAME = 53  # utils/constant.go:375 MaxRayClusterNameLength
MAX_RAYJOB_NAME = MAX_CLUSTER_NAME - 6  # utils/constant.go:381 MaxRayJobNameLength
ORIGIN_LABEL = "ray.io/originated-from-crd"  # utils/constant.go:18
FT_ANNOTATION = "ray.io/ft-enabled"  # utils/constant.go:59
AUTOSCALER_V2_ENV = "RAY_enable_autoscaler_v2"  # utils/constant.go:191

# Every rule: name -> (what it reads, the function, its v1.7.0 source).
# "cluster_meta", "job_meta": the name; "group": (group name, group, cluster
# spec); "cluster": (cluster spec, metadata); "cluster_status", "job",
# "job_status": the whole RayCluster or RayJob.
RULES = {}


class Refused(Exception):
    """A rule the object breaks: the rule's name, its v1.7.0 source, why."""

    def __init__(self, name: str, where: str, why: str):
        super().__init__(f"{why} (KubeRay v1.7.0 {where}, rule {name})")
        self.name = name


def rule(target: str, where: str):
    def register(fn):
        RULES[fn.__name__] = (target, fn, where)
        return fn
    return register


def run(target: str, *args) -> None:
    """Every rule of `target`, in the order of this file (the operator's)."""
    for name, (of, fn, where) in RULES.items():
        why = fn(*args) if of == target else None
        if why:
            raise Refused(name, where, why)


# k8s.io/apimachinery v0.36.0 (ray-operator/go.mod:25), pkg/util/validation:
# IsDNS1035Label, IsDNS1123Subdomain, IsQualifiedName, IsValidLabelValue.
_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUB = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def dns1035_label(name: str) -> bool:
    return len(name) <= 63 and _DNS1035.fullmatch(name) is not None


def qualified_name(key: str) -> bool:
    parts = key.split("/")
    if len(parts) > 2:
        return False
    if len(parts) == 2 and not (parts[0] and len(parts[0]) <= 253 and _DNS1123_SUB.fullmatch(parts[0])):
        return False
    return 0 < len(parts[-1]) <= 63 and _QUALIFIED.fullmatch(parts[-1]) is not None


def label_value(value: str) -> bool:
    return value == "" or (len(value) <= 63 and _QUALIFIED.fullmatch(value) is not None)


def ray_version(text: str):
    """k8s.io/apimachinery/pkg/util/version ParseGeneric: at least X.Y."""
    m = re.fullmatch(r"\s*v?([0-9]+(?:\.[0-9]+)+)(?:[-+].*)?\s*", text or "")
    return tuple(int(n) for n in m.group(1).split(".")) + (0,) * 3 if m else None


def _env(container: dict, name: str):
    return next((e for e in container.get("env") or [] if e.get("name") == name), None)


def _head_container(spec: dict) -> dict:
    return ((((spec.get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}).get("containers") or [{}])[0]


def _autoscaling(spec: dict) -> bool:
    return spec.get("enableInTreeAutoscaling") is True  # utils/util.go:751-754


# --- ValidateRayClusterMetadata, ValidateRayJobMetadata -----------------------

@rule("cluster_meta", f"{V}:32-40 (raycluster_controller.go:165); constant.go:375")
def cluster_name(name: str):
    """Also the name of the cluster a RayJob makes."""
    if len(name) > MAX_CLUSTER_NAME:
        return f"the RayCluster name '{name}' is longer than {MAX_CLUSTER_NAME}"
    if not dns1035_label(name):
        return f"the RayCluster name '{name}' is not a DNS-1035 label"


@rule("job_meta", f"{V}:533-541 (rayjob_controller.go:470); constant.go:381")
def rayjob_name(name: str):
    if len(name) > MAX_RAYJOB_NAME:
        return f"the RayJob name '{name}' is longer than {MAX_RAYJOB_NAME}"
    if not dns1035_label(name):
        return f"the RayJob name '{name}' is not a DNS-1035 label"


# --- ValidateRayClusterSpec: each Ray group ----------------------------------

@rule("group", f"{V}:104-106,119-121")
def group_container(name: str, group: dict, spec: dict):
    if not (((group.get("template") or {}).get("spec") or {}).get("containers")):
        return f"the {name} group's pod template has no container"


@rule("group", f"{V}:59-69 (head :108, workers :139)")
def group_resources(name: str, group: dict, spec: dict):
    params = group.get("rayStartParams") or {}
    both = [k for k in ("num-cpus", "num-gpus", "memory", "resources") if params.get(k, "") != ""]
    if both and group.get("resources"):
        return (f"the {name} group sets rayStartParams {', '.join(both)} and a group-level resources map; "
                "the operator takes one or the other")


@rule("group", f"{V}:71-100 (head :111, workers :142)")
def group_labels(name: str, group: dict, spec: dict):
    if "labels" in (group.get("rayStartParams") or {}):
        return f"the {name} group sets rayStartParams labels; the operator wants the group's labels field"
    for key, value in (group.get("labels") or {}).items():
        if not qualified_name(str(key)) or not label_value(str(value)):
            return f"the {name} group's label {key}={value} is not a valid Kubernetes label"


@rule("group", f"{V}:123-138")
def worker_replicas(name: str, group: dict, spec: dict):
    if name == "Head":
        return None
    low, high = group.get("minReplicas"), group.get("maxReplicas")
    if not _autoscaling(spec) and (low is None or high is None):
        return f"worker group {name} needs minReplicas and maxReplicas when autoscaling is off"
    if (low is not None and low < 0) or (high is not None and high < 0):
        return f"worker group {name} has a negative minReplicas or maxReplicas"
    if low is not None and high is not None and low > high:
        return f"worker group {name} has minReplicas {low} over maxReplicas {high}"


def _autoscaler_v2(spec: dict) -> bool:
    """utils/util.go:756-758, or the head's RAY_enable_autoscaler_v2 (validation.go:1021-1024)."""
    if ((spec.get("autoscalerOptions") or {}).get("version")) == "v2":
        return True
    env = _env(_head_container(spec), AUTOSCALER_V2_ENV)
    return env is not None and env.get("value") in ("1", "true")


@rule("group", f"{V}:1005-1027 (called :145)")
def worker_idle_timeout(name: str, group: dict, spec: dict):
    idle = group.get("idleTimeoutSeconds")
    if name == "Head" or idle is None:
        return None
    if idle < 0:
        return f"worker group {name} has a negative idleTimeoutSeconds"
    if not _autoscaler_v2(spec):
        return f"worker group {name} sets idleTimeoutSeconds, which needs autoscaler v2"


@rule("group", f"{V}:1112-1142 (called :148)")
def worker_priority(name: str, group: dict, spec: dict):
    if name == "Head" or not group.get("priority"):
        return None
    version = ray_version(spec.get("rayVersion", ""))
    if version is None or version < (2, 56, 0):
        return f"worker group {name} sets priority, which needs rayVersion 2.56.0 or later"
    if not _autoscaler_v2(spec):
        return f"worker group {name} sets priority, which needs autoscaler v2"


@rule("group", f"{V}:197-203, 214-220; features.go:107 (RayJobDeletionPolicy on by default)")
def worker_suspend(name: str, group: dict, spec: dict):
    if name != "Head" and group.get("suspend") is True and _autoscaling(spec):
        return f"worker group {name} is suspended with autoscaling on"


# --- ValidateRayClusterSpec: the whole cluster -------------------------------

@rule("cluster", f"{V}:153-164, 192-195")
def gcs_fault_tolerance(spec: dict, meta: dict):
    annotations = meta.get("annotations") or {}
    if annotations.get(FT_ANNOTATION, "") != "" and spec.get("gcsFaultToleranceOptions") is not None:
        return f"both the {FT_ANNOTATION} annotation and gcsFaultToleranceOptions are set"
    ft = str(annotations.get(FT_ANNOTATION, "")).lower() == "true" or spec.get("gcsFaultToleranceOptions") is not None
    head = _head_container(spec)
    if not ft and _env(head, "RAY_REDIS_ADDRESS") is not None:
        return "the head sets RAY_REDIS_ADDRESS without gcsFaultToleranceOptions"
    params = (spec.get("headGroupSpec") or {}).get("rayStartParams") or {}
    if params.get("redis-username", "") != "" or _env(head, "REDIS_USERNAME") is not None:
        return "a redis username is set in rayStartParams or the head's env"


@rule("cluster", f"{V}:205-212")
def autoscaler_v2_env(spec: dict, meta: dict):
    env = _env(_head_container(spec), AUTOSCALER_V2_ENV)
    if not _autoscaling(spec) and env is not None and env.get("value") in ("1", "true"):
        return f"the head sets {AUTOSCALER_V2_ENV}={env.get('value')} while enableInTreeAutoscaling is off"


@rule("cluster", f"{V}:260-262, 316-318, 323-325; features.go:112,114,115 (their gates off by default)")
def gated_fields(spec: dict, meta: dict):
    for field in ("historyServerOptions", "networkPolicy", "tlsOptions"):
        if spec.get(field) is not None:
            return f"spec.{field} needs an alpha feature gate of the operator that is off by default"


@rule("cluster", f"{V}:284-313")
def token_auth(spec: dict, meta: dict):
    auth = spec.get("authOptions") or {}
    k8s = auth.get("enableK8sTokenAuth") is True
    if auth.get("mode") != "token":
        return "authOptions.enableK8sTokenAuth needs authOptions.mode token" if k8s else None
    version = ray_version(spec.get("rayVersion", ""))
    if version is None:
        return f"authOptions.mode token needs a rayVersion X.Y.Z, not '{spec.get('rayVersion', '')}'"
    if version < (2, 52, 0):
        return f"authOptions.mode token needs rayVersion 2.52.0 or later, not {spec['rayVersion']}"
    if k8s and version < (2, 55, 0):
        return f"authOptions.enableK8sTokenAuth needs rayVersion 2.55.0 or later, not {spec['rayVersion']}"
    if k8s and auth.get("secretName"):
        return "authOptions.enableK8sTokenAuth and authOptions.secretName are both set"


@rule("cluster", "raycluster_webhook.go:69-79")
def unique_group_names(spec: dict, meta: dict):
    names = [g.get("groupName") for g in spec.get("workerGroupSpecs") or []]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        return f"worker group name {dup[0]} is used twice"


@rule("cluster", f"{V}:42-57 (raycluster_controller.go:205)")
def upgrade_strategy(spec: dict, meta: dict):
    kind = ((spec.get("upgradeStrategy") or {}).get("type"))
    if kind is None:
        return None
    if kind not in ("Recreate", "None"):
        return f"upgradeStrategy.type {kind} is neither Recreate nor None"
    if (meta.get("labels") or {}).get(ORIGIN_LABEL) in ("RayJob", "RayService"):
        return f"upgradeStrategy is set on a cluster a {meta['labels'][ORIGIN_LABEL]} makes"


@rule("cluster", f"{V}:166-191, 214-258, 329-375 and util.go:744-749, whose rules are not ported")
def unported(spec: dict, meta: dict):
    """What the renderer never writes and whose rules are not ported here."""
    for field in ("enableInTreeAutoscaling", "autoscalerOptions", "gcsFaultToleranceOptions", "managedBy"):
        if spec.get(field) is not None:
            return f"spec.{field}: its rules are not ported to helpers/mvp/render/kuberay_rules.py"
    for key in (FT_ANNOTATION, "ray.io/external-storage-namespace"):
        if key in (meta.get("annotations") or {}):
            return f"annotation {key}: its rules are not ported to helpers/mvp/render/kuberay_rules.py"


def cluster_spec(spec: dict, meta: dict) -> None:
    """ValidateRayClusterSpec (validation.go:103-327), the webhook's rule and
    the upgrade options, in the operator's order."""
    groups = [("Head", spec.get("headGroupSpec") or {})]
    groups += [(g.get("groupName", ""), g) for g in spec.get("workerGroupSpecs") or []]
    for group_name, group in groups:
        run("group", group_name, group, spec)
    run("cluster", spec, meta)


@rule("cluster_status", f"{V}:23-30 (raycluster_controller.go:212)")
def cluster_status(doc: dict):
    true = {c.get("type") for c in (doc.get("status") or {}).get("conditions") or [] if c.get("status") == "True"}
    if {"RayClusterSuspending", "RayClusterSuspended"} <= true:
        return "the status says Suspending and Suspended at once"


# --- ValidateRayJobSpec, ValidateRayJobStatus --------------------------------

@rule("job", f"{V}:547-558, 752-760")
def rayjob_shutdown(doc: dict):
    spec = doc.get("spec") or {}
    shutdown = spec.get("shutdownAfterJobFinishes") is True
    if spec.get("suspend") is True and not shutdown:
        return "a RayJob may be suspended only with shutdownAfterJobFinishes"
    ttl = spec.get("ttlSecondsAfterFinished", 0)
    if ttl < 0:
        return "ttlSecondsAfterFinished is negative"
    if not shutdown and ttl > 0:
        return "ttlSecondsAfterFinished acts only with shutdownAfterJobFinishes"
    if spec.get("deletionStrategy") is not None:
        return "spec.deletionStrategy: its rules (validation.go:762-966) are not ported to helpers/mvp/render/kuberay_rules.py"


@rule("job", f"{V}:560-578")
def rayjob_cluster_selector(doc: dict):
    spec = doc.get("spec") or {}
    selector = spec.get("clusterSelector") or {}
    if selector and spec.get("suspend") is True:
        return "a RayJob with a clusterSelector cannot be suspended"
    if not selector and spec.get("rayClusterSpec") is None:
        return "a RayJob needs rayClusterSpec or clusterSelector"
    if selector and not selector.get("ray.io/cluster"):
        return "clusterSelector names no ray.io/cluster"
    if selector and spec.get("submissionMode") == "SidecarMode":
        return "clusterSelector does not go with SidecarMode"
    if selector and (spec.get("backoffLimit") or 0) > 0:
        return "backoffLimit does not go with clusterSelector"


@rule("job", f"{V}:587-603")
def rayjob_submission_mode(doc: dict):
    spec = doc.get("spec") or {}
    mode = spec.get("submissionMode")
    if mode == "InteractiveMode" and (spec.get("backoffLimit") or 0) > 0:
        return "backoffLimit does not go with InteractiveMode"
    if mode != "SidecarMode":
        return None
    if spec.get("submitterPodTemplate") is not None or spec.get("submitterConfig") is not None:
        return "SidecarMode takes no submitterPodTemplate or submitterConfig"
    restart = ((((spec.get("rayClusterSpec") or {}).get("headGroupSpec") or {}).get("template") or {})
               .get("spec") or {}).get("restartPolicy", "")
    if restart not in ("", "Never"):
        return "SidecarMode needs the head's restartPolicy Never or unset"


@rule("job", f"{V}:605-608")
def rayjob_k8s_auth(doc: dict):
    if (((doc.get("spec") or {}).get("rayClusterSpec") or {}).get("authOptions") or {}).get("enableK8sTokenAuth") is True:
        return "a RayJob's cluster cannot use authOptions.enableK8sTokenAuth"


@rule("job", f"{V}:614-618 (dashboardclient/dashboard_httpclient.go:382-388)")
def rayjob_runtime_env(doc: dict):
    try:
        env = yaml.safe_load((doc.get("spec") or {}).get("runtimeEnvYAML") or "")
    except yaml.YAMLError as e:
        return f"runtimeEnvYAML is not YAML ({str(e).splitlines()[0]})"
    if env is not None and not isinstance(env, dict):
        return "runtimeEnvYAML is not a YAML mapping"


@rule("job", f"{V}:619-627")
def rayjob_deadlines(doc: dict):
    spec = doc.get("spec") or {}
    for field in ("activeDeadlineSeconds", "preRunningDeadlineSeconds"):
        if spec.get(field) is not None and spec[field] <= 0:
            return f"{field} must be positive"
    if spec.get("backoffLimit") is not None and spec["backoffLimit"] < 0:
        return "backoffLimit is negative"


@rule("job_status", f"{V}:526-531 (rayjob_controller.go:472)")
def rayjob_status(doc: dict):
    waiting = (doc.get("status") or {}).get("jobDeploymentStatus") == "Waiting"
    if waiting and (doc.get("spec") or {}).get("submissionMode") != "InteractiveMode":
        return "the status is Waiting outside InteractiveMode"


def rayjob(doc: dict) -> None:
    """The RayJob controller's checks (rayjob_controller.go:464-473; its
    rayClusterSpec's after the RayJob's own, where the operator checks it
    between them: only which of two refusals is named first differs), then
    the RayCluster controller's on the cluster the RayJob makes."""
    meta, spec = doc.get("metadata") or {}, doc.get("spec") or {}
    run("job_meta", meta.get("name", ""))
    run("job", doc)
    if spec.get("rayClusterSpec") is not None:
        cluster_spec(spec["rayClusterSpec"], meta)  # validation.go:605-612, with the RayJob's annotations
    run("job_status", doc)
    if spec.get("rayClusterSpec") is not None:
        # The cluster it makes: <name>-<5 random>, labelled as the RayJob's.
        made = {"labels": {**(meta.get("labels") or {}), ORIGIN_LABEL: "RayJob"},
                "annotations": meta.get("annotations") or {}}
        run("cluster_meta", f"{meta.get('name', '')}-xxxxx")
        cluster_spec(spec["rayClusterSpec"], made)


def check(doc: dict) -> None:
    """Raises Refused when KubeRay v1.7.0 would refuse `doc` (a RayCluster or a
    RayJob; other kinds are not the operator's)."""
    if doc.get("kind") == "RayCluster":
        meta = doc.get("metadata") or {}
        run("cluster_meta", meta.get("name", ""))
        cluster_spec(doc.get("spec") or {}, meta)
        run("cluster_status", doc)
    elif doc.get("kind") == "RayJob":
        rayjob(doc)
