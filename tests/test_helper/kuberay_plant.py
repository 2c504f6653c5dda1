"""Runs KubeRay v1.7.0's ported rules (helpers/mvp/render/kuberay_rules.py) on one
document of a rendered file, after planting a change in it.

Usage: kuberay_plant.py FILE.yaml KIND 'PYTHON'
PYTHON is run with `doc` (the first document of KIND), `spec` (its cluster
spec: a RayCluster's spec, a RayJob's rayClusterSpec), `head` and `worker`
(its head and first worker group) and `job` (a RayJob's spec, else None).
Prints `ok`, or `refused RULE: MESSAGE` (exit 0 either way); a planted
change that did not change the document exits 2."""
import copy
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "helpers"))
from mvp.render import kuberay_rules  # noqa: E402


def main(path: str, kind: str, planted: str) -> int:
    doc = next(d for d in yaml.safe_load_all(Path(path).read_text(encoding="utf-8")) if d and d["kind"] == kind)
    before = copy.deepcopy(doc)
    spec = doc["spec"] if kind == "RayCluster" else doc["spec"]["rayClusterSpec"]
    names = {"doc": doc, "spec": spec, "head": spec["headGroupSpec"], "worker": spec["workerGroupSpecs"][0],
             "job": doc["spec"] if kind == "RayJob" else None}
    exec(planted, {}, names)  # the test's own planted change
    if planted and doc == before:
        print("the planted change changed nothing")
        return 2
    try:
        kuberay_rules.check(doc)
    except kuberay_rules.Refused as e:
        print(f"refused {e.name}: {e}")
        return 0
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
