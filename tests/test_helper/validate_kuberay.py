"""Validates KubeRay resources (multi-document YAML files) against KubeRay's
CRDs, strictly: `additionalProperties: false` is added to every object schema
that lists `properties` and says nothing of extra ones, so a misspelt field
fails (the API server's pruning would drop it silently).

Usage: validate_kuberay.py SCHEMA_DIR FILE.yaml...
Prints one line per problem (`KIND/NAME: path: message`) and exits 1 if any.
The CRDs are megabytes of YAML: with MVP_TEST_CRD_CACHE set to a directory,
each strict schema is kept there as JSON after its first parse, so the tests
of one file parse each CRD once."""
import json
import os
import sys
from pathlib import Path

import jsonschema
import yaml

CRDS = {"RayCluster": "ray.io_rayclusters.yaml", "RayJob": "ray.io_rayjobs.yaml",
        "RayCronJob": "ray.io_raycronjobs.yaml"}
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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
    cache = os.environ.get("MVP_TEST_CRD_CACHE")
    kept = Path(cache) / f"{kind}.json" if cache else None
    if kept and kept.is_file():
        return json.loads(kept.read_text(encoding="utf-8"))
    crd = yaml.load((schema_dir / CRDS[kind]).read_text(encoding="utf-8"), Loader=LOADER)
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    schema = strict(version["schema"]["openAPIV3Schema"])
    if kept:
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.with_suffix(".tmp").write_text(json.dumps(schema), encoding="utf-8")
        kept.with_suffix(".tmp").replace(kept)
    return schema


def problems_of(schema_dir: Path, path: str, schemas: dict) -> list:
    problems, seen = [], 0
    for doc in yaml.load_all(Path(path).read_text(encoding="utf-8"), Loader=LOADER):
        if not doc or doc.get("kind") not in CRDS:
            continue
        seen += 1
        kind = doc["kind"]
        if kind not in schemas:
            schemas[kind] = crd_schema(schema_dir, kind)
        validator = jsonschema.Draft7Validator(schemas[kind])
        for err in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path)):
            where = ".".join(str(p) for p in err.absolute_path) or "(top)"
            problems.append(f"{kind}/{doc.get('metadata', {}).get('name')}: {where}: {err.message}")
    if seen == 0:
        problems.append(f"{path}: no RayCluster, RayJob or RayCronJob in it")
    return problems


def main(schema_dir: str, *paths: str) -> int:
    if not paths:
        print("usage: validate_kuberay.py SCHEMA_DIR FILE.yaml...")
        return 2
    schemas, problems = {}, []
    for path in paths:
        problems += problems_of(Path(schema_dir), path, schemas)
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
