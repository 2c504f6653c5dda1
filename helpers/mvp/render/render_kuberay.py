"""`render-kuberay`: the runbook's topology and jobs as KubeRay resources.

- RayCluster: a head that is control plane only (rayStartParams num-cpus "0",
  num-gpus "0"), one GPU worker group carrying the worker_node resource (the
  group's `resources` map, which KubeRay passes to `ray start` quoted; its
  GPUs the container's nvidia.com/gpu limit, from which KubeRay derives
  --num-gpus: _worker_ray_resources), the shared volume (a ReadWriteMany claim) at /private on every pod, token auth
  when asked for.
- RayJob (one JobSpec): its own cluster of that shape, deleted after the job
  (shutdownAfterJobFinishes + ttlSecondsAfterFinished), failed when it cannot
  start or end in time (activeDeadlineSeconds: a RayJob waiting for resources
  is otherwise never failed). entrypoint, entrypointNumCpus,
  entrypointResources (a JSON string) and runtimeEnvYAML (PYTHONPATH = the
  code snapshot; never working_dir) are the plan the runbook submits. The
  submitter pod runs the runbook's own submit path with that submission id,
  so /private/jobs/<id>/ is laid out as on every other runtime and the
  submitter's exit code is the job's truth (0 only for SUCCEEDED).
- The nightly: the RayCluster and a plain Kubernetes CronJob whose pod runs
  60_nightly_regression.sh against it (runtime kuberay), as cron runs it on
  every other runtime. No RayCronJob: that is alpha behind the operator's
  RayCronJob feature gate (off by default) and would start one RayCluster per
  job at the same time, where a night runs its jobs one after another on one.

Paths are rewritten from this host's view (SHARED_ROOT, the repo) to the pods'
(/private, MVP_K8S_RUNBOOK_DIR). What the operator would refuse is refused
here in one line, nothing written: a field newer than MVP_KUBERAY_VERSION,
any release but those whose rules are ported (kuberay_rules.py), and what
those rules refuse; so is an image known to lack the runbook."""
import json
import math
import re
import sys
from pathlib import Path

import yaml

from ..jobs.planning import jobspec, plan as plan_mod
from . import kuberay_rules
from ..core import log
from ..worker import redact
from ..worker.errors import MvpError
from ..core.layout import Layout

POD_SHARED_ROOT = "/private"
REPO = Path(__file__).resolve().parents[3]
# What the rendered resources use that not every KubeRay release has: the
# field, the first release whose CRD has it (ray-operator/config/crd/bases/
# ray.io_rayclusters.yaml and ray.io_rayjobs.yaml at each tag v1.0.0..v1.7.0),
# whether a cluster spec has it, and what else the user can do.
FIELDS_SINCE = (
    ("the worker group's resources map (worker_node)", (1, 5, 0),
     lambda spec: any("resources" in g for g in [spec["headGroupSpec"], *spec.get("workerGroupSpecs", [])]), ""),
    ("authOptions (MVP_K8S_AUTH=1, token auth)", (1, 5, 1), lambda spec: "authOptions" in spec,
     " (or set MVP_K8S_AUTH=0)"),
)
# verl's own images, which hold no runbook (the pods run it from MVP_K8S_RUNBOOK_DIR).
UPSTREAM_IMAGES = ("verlai/verl", "docker.io/verlai/verl", "index.docker.io/verlai/verl")
class K8s:
    """The settings the renderer reads, from the one settings object (the
    contract's MVP_K8S_* and the topology; scripts/lib/helper.sh passes every
    one, checked against its contract type)."""

    def __init__(self, settings):
        self.namespace = settings.k8s_namespace
        self.image = settings.k8s_image  # empty: the image 72 builds, resolved by config.sh from the contract
        self.ray_version = settings.k8s_ray_version
        self.kuberay = _version(settings.kuberay_version)
        self.pvc, self.pvc_size = settings.k8s_pvc, settings.k8s_pvc_size
        self.storage_class = settings.k8s_storage_class
        self.runbook_dir = str(settings.k8s_runbook_dir).rstrip("/")
        self.auth = settings.k8s_auth
        self.ttl, self.start_margin = settings.k8s_ttl_seconds, settings.k8s_start_seconds
        self.schedule, self.time_zone = settings.k8s_schedule, settings.k8s_time_zone
        self.nightly_only = settings.text("MVP_K8S_NIGHTLY_ONLY")
        self.head_cpus, self.head_memory = settings.k8s_head_cpus, settings.k8s_head_memory
        self.worker_cpus, self.worker_memory = settings.k8s_worker_cpus, settings.k8s_worker_memory
        self.shm_size = settings.k8s_shm_size
        self.workers, self.gpus = settings.workers, settings.gpus_per_worker
        # Seconds, a fraction counting as a whole one (a deadline is whole seconds).
        self.job_timeout = math.ceil(settings.job_timeout)
        self.host_shared_root = str(settings.shared_root).rstrip("/")
        # The settings the helper needs, as the submitter pod sees them: the
        # contract's list (MVP_K8S_POD_SETTINGS); and the nightly pod's, every
        # MVP_NIGHTLY_* setting and the sources 30 and 31 read, as passed.
        self.settings = {name: settings.text(name) for name in settings.k8s_pod_settings}
        self.nightly = {name: settings.text(name) for name in settings.variables()
                        if name.startswith("MVP_NIGHTLY_") and name not in self.settings}
        self.sources = {name: settings.text(name) for name in ("CODE_ID", "MVP_VERL_SRC", "MVP_MODEL_SOURCE")}


def _version(text: str) -> tuple:
    m = re.fullmatch(r"v?([0-9]+)\.([0-9]+)\.([0-9]+)", text or "")
    if not m:
        raise MvpError(f"MVP_KUBERAY_VERSION='{text}' is not a KubeRay release; set it to your operator's, e.g. 1.7.0")
    return tuple(int(n) for n in m.groups())


def _dotted(version: tuple) -> str:
    return ".".join(map(str, version))


def _cluster_specs(docs: list):
    for d in docs:
        if d["kind"] == "RayCluster":
            yield d["spec"]
        elif d["kind"] == "RayJob":
            yield d["spec"]["rayClusterSpec"]


def check_operator(k: K8s, docs: list) -> None:
    """What the stated operator cannot take is refused, one line: a rendered
    field newer than it, then any release but those whose rules are ported
    (kuberay_rules.SERVES), then what those rules refuse."""
    have, rules = _dotted(k.kuberay), _dotted(kuberay_rules.VERSION)
    newest = _dotted(max(kuberay_rules.SERVES))
    for field, since, used, otherwise in FIELDS_SINCE:
        if k.kuberay < since and any(used(spec) for spec in _cluster_specs(docs)):
            raise MvpError(f"{field}, which 71 renders, needs KubeRay v{_dotted(since)} (its CRD has it since) and "
                           f"MVP_KUBERAY_VERSION is {have}; upgrade the operator to v{newest} and set "
                           f"MVP_KUBERAY_VERSION={newest}{otherwise}")
    if k.kuberay not in kuberay_rules.SERVES:
        served = " or ".join(f"v{_dotted(v)}" for v in kuberay_rules.SERVES)
        raise MvpError(f"MVP_KUBERAY_VERSION is {have}, and 71 checks what it renders against KubeRay v{rules}'s own "
                       f"rules only (helpers/mvp/render/kuberay_rules.py, commit {kuberay_rules.COMMIT[:12]}), which "
                       f"are {served}'s; run one of those operators and set MVP_KUBERAY_VERSION to it")
    for d in docs:
        try:
            kuberay_rules.check(d)
        except kuberay_rules.Refused as e:
            raise MvpError(f"KubeRay v{rules} would refuse {d['kind']}/{d['metadata']['name']}: {e}") from None


def check_image(k: K8s) -> None:
    """The pods' image must carry the runbook. Without pulling it, what can be
    known is its name: verl's own images do not (the image 72 builds does)."""
    name = re.sub(r"@.*$|:[^/:]*$", "", k.image)
    if name in UPSTREAM_IMAGES:
        raise MvpError(f"MVP_K8S_IMAGE={k.image} is verl's own image, which lacks this runbook (every pod runs it from "
                       f"{k.runbook_dir}); build the runbook's image with scripts/72_build_image.sh, push it, and "
                       "leave MVP_K8S_IMAGE empty (it is then the image 72 builds: MVP_K8S_IMAGE_REPO:<VERSION>)")


def _pod_path(k: K8s, text: str) -> str:
    """A host path (or a string holding some) as the pods see it."""
    text = text.replace(k.host_shared_root, POD_SHARED_ROOT)
    return text.replace(str(REPO), k.runbook_dir)


def _meta(k: K8s, name: str, labels: dict | None = None) -> dict:
    meta = {"name": name, "labels": {"app.kubernetes.io/part-of": "mvp", **(labels or {})}}
    if k.namespace:
        meta["namespace"] = k.namespace
    return meta


def _volume(k: K8s) -> tuple:
    volumes = [{"name": "shared", "persistentVolumeClaim": {"claimName": k.pvc}}]
    mounts = [{"name": "shared", "mountPath": POD_SHARED_ROOT}]
    return volumes, mounts


def _resources(cpus: str, memory: str, gpus: int = 0) -> dict:
    res = {"cpu": cpus, "memory": memory}
    if gpus:
        res["nvidia.com/gpu"] = gpus
    return {"requests": dict(res), "limits": dict(res)}


def _worker_ray_resources(k: K8s) -> dict:
    """The worker group's Ray resources: its group-level `resources` map and
    no rayStartParams resource (KubeRay v1.7.0 refuses a group with both:
    utils/validation.go:59-69). The map, because KubeRay quotes the --resources
    it makes from it (common/pod.go:1677-1684) and pastes a rayStartParam
    unquoted into the pod's bash line (pod.go:1518-1544). worker_node is what
    job drivers ask for (entrypointResources), so they run here. The GPUs are
    the container's nvidia.com/gpu limit, which Kubernetes allocates and from
    which KubeRay derives --num-gpus itself (pod.go:1414-1417, 1453-1456):
    one number, not two that could disagree. No GPUs: Ray's GPU 0 here
    (pod.go:1670-1671), else Ray would count whatever GPUs the node's
    container runtime shows a pod without a limit."""
    return {"worker_node": "100"} if k.gpus else {"worker_node": "100", "GPU": "0"}


def cluster_spec(k: K8s) -> dict:
    volumes, mounts = _volume(k)

    def pod(name: str, resources: dict, shm: str = "") -> dict:
        # A container's /dev/shm is 64 MiB unless a memory-backed volume is
        # mounted there: NCCL and Ray's object store need more.
        extra_volumes, extra_mounts = ([{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": shm}}],
                                       [{"name": "dshm", "mountPath": "/dev/shm"}]) if shm else ([], [])
        return {"spec": {"containers": [{"name": name, "image": k.image, "resources": resources,
                                         "volumeMounts": mounts + extra_mounts}], "volumes": volumes + extra_volumes}}
    spec = {
        "rayVersion": k.ray_version,
        # The head runs Ray's control plane only: no task or actor lands there.
        "headGroupSpec": {"rayStartParams": {"num-cpus": "0", "num-gpus": "0"},
                          "template": pod("ray-head", _resources(k.head_cpus, k.head_memory))},
        "workerGroupSpecs": [{
            "groupName": "gpu-workers", "replicas": k.workers, "minReplicas": k.workers, "maxReplicas": k.workers,
            "resources": _worker_ray_resources(k),
            "template": pod("ray-worker", _resources(k.worker_cpus, k.worker_memory, k.gpus), k.shm_size),
        }],
    }
    if k.auth:
        spec["authOptions"] = {"mode": "token"}
    return spec


def raycluster(k: K8s) -> dict:
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": _meta(k, "mvp11-ray"),
            "spec": cluster_spec(k)}


def pvc(k: K8s) -> dict:
    spec = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": k.pvc_size}}}
    if k.storage_class:
        spec["storageClassName"] = k.storage_class
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": _meta(k, k.pvc), "spec": spec}


# The submitter container's command: `mvp submit` reads the JobSpec and the
# Ray config on stdin (never argv), here from the container's environment;
# the dashboard address is KubeRay's RAY_DASHBOARD_ADDRESS, read when the
# pod runs (Kubernetes expands $(VAR) in env values only for variables
# defined before them, and KubeRay adds its own after ours).
# The cluster's name (MVP_CLUSTER_NAME) is its RayCluster's, from KubeRay's
# <cluster>-head-svc.<namespace>... service address.
SUBMITTER_SH = ('export MVP_DASHBOARD_URL="http://$RAY_DASHBOARD_ADDRESS" '
                'MVP_CLUSTER_NAME="kuberay@${RAY_DASHBOARD_ADDRESS%%-head-svc*}"; '
                'printf "%s\\0%s" "$MVP_JOBSPEC_TEXT" "$MVP_RAY_CONFIG_TEXT" | exec python3 -m mvp submit "$@"')


# Linux refuses to exec with any one environment string over 128 KiB.
MAX_ENV_STRING = 128 * 1024


def _submitter(k: K8s, spec_name: str, spec_text: str, cfg_text: str, submission_id: str, overrides: tuple,
               configured_model: bool) -> dict:
    size = len(f"MVP_JOBSPEC_TEXT={spec_text}".encode())
    if size >= MAX_ENV_STRING:
        raise MvpError(f"{spec_name}: {size} bytes; the submitter pod gets the JobSpec in one environment variable, "
                       f"which Linux limits to {MAX_ENV_STRING}; keep data and code in files and name their paths")
    volumes, mounts = _volume(k)
    cfg = yaml.safe_load(cfg_text) or {}
    cfg.pop("address", None)  # the submit path's default: MVP_DASHBOARD_URL
    command = ["sh", "-c", SUBMITTER_SH, "mvp-submit", "--via", "cli", "--jobspec-name", spec_name,
               "--ray-config-name", "templates/configs/dev.yaml",
               "--submission-id", submission_id, "--wait"] + (["--configured-model"] if configured_model else [])
    for item in overrides:
        command += ["--override", item]
    env = [{"name": "MVP_JOBSPEC_TEXT", "value": spec_text},
           {"name": "MVP_RAY_CONFIG_TEXT", "value": yaml.safe_dump(cfg, sort_keys=False)},
           {"name": "SHARED_ROOT", "value": POD_SHARED_ROOT}, {"name": "MVP_RUNTIME", "value": "kuberay"},
           {"name": "MVP_HEAD_IP", "value": ""}, {"name": "MVP_WORKER_IPS", "value": ""},
           {"name": "MVP_HEAD_NODE", "value": "ray-head"}, {"name": "CODE_ID", "value": k.sources["CODE_ID"]},
           {"name": "MVP_VERL_SRC", "value": ""}, {"name": "MVP_MODEL_SOURCE", "value": ""},
           {"name": "MVP_DRY_RUN", "value": "0"}, {"name": "MVP_NODE_RAY_DIRS", "value": ""}, {"name": "MVP_NODE_SSH", "value": ""},
           {"name": "MVP_JOB_ENV_NAMES", "value": ""}, {"name": "PYTHONPATH", "value": f"{k.runbook_dir}/helpers"},
           # What a job's fingerprint records as its image (job_fingerprint.py).
           {"name": "MVP_IMAGE", "value": ""}, {"name": "MVP_K8S_IMAGE", "value": k.image}]
    env += [{"name": n, "value": v} for n, v in k.settings.items()]
    return {"spec": {"restartPolicy": "Never", "volumes": volumes, "containers": [{
        "name": "ray-job-submitter", "image": k.image, "command": command, "env": env, "volumeMounts": mounts,
        "resources": _resources("500m", "1Gi")}]}}


def _job_spec(k: K8s, plan, spec_name: str, spec_text: str, cfg_text: str, overrides: tuple, submission_id: str,
              configured_model: bool = False) -> dict:
    secret = sorted(n for n in plan.env_vars if redact.is_secret(n))
    if secret:
        raise MvpError(f"env_vars {', '.join(secret)}: a manifest is a file and secrets never go in files; "
                       "put them in a Kubernetes Secret and reference it from the pod templates")
    env_vars = {n: _pod_path(k, v) for n, v in plan.env_vars.items()}
    return {
        "entrypoint": " ".join(_pod_path(k, w) for w in plan.entrypoint),
        "entrypointNumCpus": plan.entrypoint_num_cpus,
        # A JSON string in the CRD, not a mapping.
        "entrypointResources": json.dumps(plan.entrypoint_resources),
        # PYTHONPATH picks the code snapshot; working_dir would upload a copy.
        "runtimeEnvYAML": yaml.safe_dump({"env_vars": env_vars}, sort_keys=True),
        "shutdownAfterJobFinishes": True,
        "ttlSecondsAfterFinished": k.ttl,
        # A RayJob waiting for resources is never failed without this.
        "activeDeadlineSeconds": k.job_timeout + k.start_margin,
        "submissionMode": "K8sJobMode",
        "submitterConfig": {"backoffLimit": 0},
        "submitterPodTemplate": _submitter(k, spec_name, spec_text, cfg_text, submission_id, overrides,
                                           configured_model),
        "rayClusterSpec": cluster_spec(k),
    }


def _plan(settings, spec_name: str, spec_text: str, cfg_text: str, overrides: tuple, submission_id: str = "",
          configured_model: bool = False):
    spec = jobspec.parse_jobspec(spec_text, spec_name)
    cfg = jobspec.parse_ray_config(cfg_text, "templates/configs/dev.yaml")
    if configured_model:  # as 40-42 (and so the nightly) submit
        spec["model"] = str(Layout(settings.shared_root).model(settings.model_id))
    extra = tuple(jobspec.parse_override_arg(item) for item in overrides)
    return plan_mod.build(spec, cfg, settings, extra, submission_id)


def _name(submission_id: str) -> str:
    most = kuberay_rules.MAX_RAYJOB_NAME
    name = re.sub(r"[^a-z0-9-]", "-", submission_id.lower()).strip("-")[:most].rstrip("-")
    return name if name[:1].isalpha() else f"j{name}"[:most]


def _refuse_retries(spec_name: str, spec_text: str) -> None:
    """A RayJob cannot resume its job: KubeRay ends the RayJob, and deletes
    its cluster (shutdownAfterJobFinishes), when the Ray job named by its
    jobId ends, so a resumption (a new job, <id>-r1) would have no cluster to
    run on; and the operator's own retry (the RayJob's backoffLimit) starts
    the job again from step 0 on a new cluster under the same jobId, which
    the runbook refuses (ids are never reused). Refused, not dropped silently."""
    retries = jobspec.parse_jobspec(spec_text, spec_name).get("retries") or 0
    if retries > 0:
        raise MvpError(f"{spec_name}: retries: {retries} cannot be honoured by a RayJob (its cluster is deleted when "
                       "its one Ray job ends, so no resumption could run); set retries: 0 for a RayJob, or render a "
                       "long-lived cluster (71 cluster) and submit to it with MVP_RUNTIME=kuberay and --wait --retry N")


def rayjob(k: K8s, settings, spec_name: str, spec_text: str, cfg_text: str, overrides: tuple) -> dict:
    _refuse_retries(spec_name, spec_text)
    p = _plan(settings, spec_name, spec_text, cfg_text, overrides)
    spec = {"jobId": p.submission_id, **_job_spec(k, p, spec_name, spec_text, cfg_text, overrides, p.submission_id)}
    return {"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": _meta(k, _name(p.submission_id), {"mvp/workload": p.workload}), "spec": spec}


def _nightly_jobs(k: K8s, settings) -> tuple:
    """60's arguments and how many jobs a night runs: the suite's
    (MVP_NIGHTLY_SUITE, checked here as 60 checks it), MVP_K8S_NIGHTLY_ONLY
    as 60's --only. The pod reads the suite from the image's runbook or the
    shared volume: a file elsewhere is refused."""
    from ..nightly import suite
    where = suite.resolve(settings.nightly_suite or suite.DEFAULT, REPO)
    try:
        planned = suite.night(where, k.nightly_only, settings.nightly_resume, list(settings.nightly_overrides),
                              settings.trainer_profile)[0]
    except MvpError as exc:
        if not str(exc).startswith("--only: "):
            raise
        raise MvpError(f"MVP_K8S_NIGHTLY_ONLY='{k.nightly_only}': {str(exc).removeprefix('--only: ')}, or leave it "
                       "empty for all of them") from None
    if not (where.resolve().is_relative_to(REPO) or where.is_relative_to(k.host_shared_root)):
        raise MvpError(f"MVP_NIGHTLY_SUITE={where}: the nightly pod cannot read it (neither in the runbook, which the "
                       f"image holds, nor under SHARED_ROOT {k.host_shared_root}); move it into one of them")
    for spec in [j.spec for j in planned if j.spec and not Path(j.spec).resolve().is_relative_to(REPO)]:
        raise MvpError(f"{where}: spec {spec}: the nightly pod reads the suite's JobSpecs from the runbook in its "
                       "image; put it in the runbook and name it relative to the repo")
    return (["--only", k.nightly_only] if k.nightly_only else []), len(planned)


def _nightly_env(k: K8s, cluster: str) -> list:
    """The nightly pod's environment: runtime kuberay against the RayCluster
    `cluster`, the settings and nightly knobs as the pod sees them, and the
    cluster's token when token auth is on."""
    env = [{"name": "MVP_RUNTIME", "value": "kuberay"}, {"name": "SHARED_ROOT", "value": POD_SHARED_ROOT},
           # KubeRay's name for the head's Service (utils.GenerateHeadServiceName).
           {"name": "MVP_K8S_HEAD_SERVICE", "value": f"{cluster}-head-svc"},
           # As the RayJob's submitter names its cluster: kuberay@<RayCluster>.
           {"name": "MVP_CLUSTER_NAME", "value": f"kuberay@{cluster}"},
           {"name": "CODE_ID", "value": k.sources["CODE_ID"]},
           {"name": "MVP_VERL_SRC", "value": _pod_path(k, k.sources["MVP_VERL_SRC"])},
           {"name": "MVP_MODEL_SOURCE", "value": _pod_path(k, k.sources["MVP_MODEL_SOURCE"])},
           # The pod's own image, as rendered: what the night's jobs record (job_fingerprint.py).
           {"name": "MVP_K8S_IMAGE", "value": k.image}]
    env += [{"name": n, "value": v} for n, v in k.settings.items()]
    env += [{"name": n, "value": _pod_path(k, v)} for n, v in k.nightly.items()]
    if k.auth:
        # The token KubeRay keeps for the cluster (common/pod.go
        # SetContainerTokenAuthEnvVars: the Secret named after the cluster,
        # key auth_token): Ray's clients read RAY_AUTH_TOKEN.
        env += [{"name": "RAY_AUTH_MODE", "value": "token"},
                {"name": "RAY_AUTH_TOKEN", "valueFrom": {"secretKeyRef": {"name": cluster, "key": "auth_token"}}}]
    return env


def nightly_cronjob(k: K8s, settings) -> dict:
    """The nightly: a plain Kubernetes CronJob (batch/v1, no KubeRay feature
    gate) whose one pod runs 60_nightly_regression.sh against the long-lived
    RayCluster of `71 cluster` (runtime kuberay: scripts/lib/runtime_kuberay.sh),
    so a night is what it is on every runtime: one cluster's GPUs, the jobs
    one after another, the judgment and report on the shared volume, the
    pod's exit status the night's. Never two at once: concurrencyPolicy
    Forbid, and 60's own lock on the shared volume."""
    args, jobs = _nightly_jobs(k, settings)
    volumes, mounts = _volume(k)
    env = _nightly_env(k, raycluster(k)["metadata"]["name"])
    pod = {"restartPolicy": "Never", "volumes": volumes, "containers": [{
        "name": "nightly", "image": k.image,
        "command": ["bash", f"{k.runbook_dir}/scripts/60_nightly_regression.sh"], "args": args,
        "env": env, "volumeMounts": mounts, "resources": _resources("1", "2Gi")}]}
    spec = {"schedule": k.schedule, "concurrencyPolicy": "Forbid",
            # A night that could not start on time is skipped, not run late in the day.
            "startingDeadlineSeconds": k.start_margin,
            "jobTemplate": {"spec": {
                # A failed night is reported, not run again.
                "backoffLimit": 0,
                "activeDeadlineSeconds": jobs * k.job_timeout + k.start_margin,
                "template": {"metadata": {"labels": {"app.kubernetes.io/part-of": "mvp"}}, "spec": pod}}}}
    if k.time_zone:
        spec["timeZone"] = k.time_zone  # Kubernetes' own (batch/v1 CronJob, 1.27+), not KubeRay's
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": _meta(k, "mvp-nightly"), "spec": spec}


def main(args, settings) -> int:
    k = K8s(settings)
    check_image(k)
    cfg_text = args.ray_config_text
    # Every file starts with the shared volume's claim: `kubectl apply -f`
    # creates in file order, so no pod waits for a claim that is not there
    # (applying it again when it exists changes nothing).
    if args.what == "cluster":
        docs = [pvc(k), raycluster(k)]
    elif args.what == "job":
        spec_text = jobspec.decode_input(sys.stdin.buffer.read(), args.jobspec_name)
        docs = [pvc(k), rayjob(k, settings, args.jobspec_name, spec_text, cfg_text, tuple(args.override))]
    else:
        # The cluster the nightly runs on, then its CronJob (which reads the
        # cluster's Secret, made by the operator).
        docs = [pvc(k), raycluster(k), nightly_cronjob(k, settings)]
    # A render the operator would refuse is a failed render: nothing written.
    check_operator(k, docs)
    sys.stdout.write(yaml.safe_dump_all(docs, sort_keys=False, width=1000))
    log.info(f"rendered {', '.join(d['kind'] + '/' + d['metadata']['name'] for d in docs)}")
    return 0
