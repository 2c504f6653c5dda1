"""Validates KubeRay resources (a multi-document YAML file) against KubeRay's
CRDs, strictly: `additionalProperties: false` is added to every object schema
that lists `properties` and says nothing of extra ones, so a misspelt field
fails (the API server's pruning would drop it silently).

Usage: validate_kuberay.py SCHEMA_DIR FILE.yaml
Prints one line per problem (`KIND/NAME: path: message`) and exits 1 if any."""
import sys
from pathlib import Path

import jsonschema
import yaml

CRDS = {"RayCluster": "ray.io_rayclusters.yaml", "RayJob": "ray.io_rayjobs.yaml",
        "RayCronJob": "ray.io_raycronjobs.yaml"}


def strict(schema):
    if isinstance(schema, dict):
        if "properties" in schema and "additionalProperties" not in schema:
            schema["additionalProperties"] = False
        for value in schema.values():
            strict(value)
    elif isinstance(schema, list):
        for value in schema:
            strict(value)
    return schema


def crd_schema(schema_dir: Path, kind: str) -> dict:
    crd = yaml.safe_load((schema_dir / CRDS[kind]).read_text(encoding="utf-8"))
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    return strict(version["schema"]["openAPIV3Schema"])


def main(schema_dir: str, path: str) -> int:
    problems, seen = [], 0
    schemas = {}
    for doc in yaml.safe_load_all(Path(path).read_text(encoding="utf-8")):
        if not doc or doc.get("kind") not in CRDS:
            continue
        seen += 1
        kind = doc["kind"]
        schemas.setdefault(kind, crd_schema(Path(schema_dir), kind))
        validator = jsonschema.Draft7Validator(schemas[kind])
        for err in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path)):
            where = ".".join(str(p) for p in err.absolute_path) or "(top)"
            problems.append(f"{kind}/{doc.get('metadata', {}).get('name')}: {where}: {err.message}")
    if seen == 0:
        problems.append(f"{path}: no RayCluster, RayJob or RayCronJob in it")
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
