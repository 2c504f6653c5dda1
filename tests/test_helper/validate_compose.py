"""Validates compose files against the Compose specification's JSON schema.

Usage: python validate_compose.py SCHEMA FILE...
Prints one line per violation (file, path in the document, message) and exits 1
when there is any; prints "valid: FILE" per file otherwise.
"""
import json
import sys

import jsonschema
import yaml


def main(argv: list[str]) -> int:
    with open(argv[1], encoding="utf-8") as fh:
        schema = json.load(fh)
    # The schema names draft-07 by an address jsonschema does not know ("https", no "#").
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    bad = 0
    for path in argv[2:]:
        with open(path, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        for err in errors:
            where = "/".join(str(p) for p in err.absolute_path) or "(top)"
            print(f"{path}: {where}: {err.message}")
        bad += len(errors)
        if not errors:
            print(f"valid: {path}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
