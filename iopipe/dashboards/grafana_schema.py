"""Grafana's own dashboard schema, as JSON Schema, and a check of dashboards against it.

    python3 -m iopipe.dashboards.grafana_schema                 # make the schemas (cached), print where
    python3 -m iopipe.dashboards.grafana_schema FILE.json ...   # check dashboards, print every error

The schemas are generated from the TypeScript types Grafana publishes for the release the
SDK is pinned to (npm @grafana/schema) with ts-json-schema-generator: the dashboard model
(`Dashboard`, the types Grafana's frontend reads dashboards with) and, for every panel
plugin, its `Options` and `FieldConfig`. Generation takes seconds and needs the npm
registry once; packages and schemas are cached under $IOPIPE_CACHE/grafana-schema/<version>/.

Two readings follow Grafana rather than the literal types:
- a panel's options and custom field config are checked for unknown fields and wrong
  types, not for completeness: Grafana fills what a dashboard leaves out from the panel
  plugin's defaults;
- an annotation's `target` is the plugin's query, which extends the base DataQuery type
  with its own fields (rawSql...), as panel targets do: it is open to them.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import jsonschema

from iopipe.paths import CACHE

GRAFANA_SCHEMA_VERSION = "11.6.0"  # the Grafana release grafana-foundation-sdk is pinned to
GENERATOR_VERSION = "2.4.0"  # ts-json-schema-generator
TYPESCRIPT_VERSION = "5.8.3"
DIST = "node_modules/@grafana/schema/dist/esm"
DASHBOARD_TYPES = f"{DIST}/veneer/dashboard.types.d.ts"
PANEL_TYPES = f"{DIST}/raw/composable"  # <plugin>/panelcfg/x/<Name>PanelCfg_types.gen.d.ts


def cache_dir():
    root = CACHE
    return root / "grafana-schema" / f"{GRAFANA_SCHEMA_VERSION}-tsjsg{GENERATOR_VERSION}"


def installed():
    """The pinned packages, npm-installed once into the cache (whole or not at all)."""
    destination = cache_dir()
    if (destination / DASHBOARD_TYPES).exists():
        return destination
    destination.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=destination.parent) as scratch:
        work = Path(scratch) / "packages"
        work.mkdir()
        (work / "package.json").write_text('{"private": true}\n')
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error",
                        f"@grafana/schema@{GRAFANA_SCHEMA_VERSION}", f"ts-json-schema-generator@{GENERATOR_VERSION}",
                        f"typescript@{TYPESCRIPT_VERSION}"], cwd=work, check=True, capture_output=True, text=True)
        if not destination.exists():
            work.rename(destination)
    return destination


def generated(source, type_name, name):
    """The JSON Schema of `type_name` in the TypeScript file `source`, generated once and cached;
    None when the file does not declare that type."""
    packages = installed()
    target = packages / "schemas" / f"{name}.json"
    if target.exists():
        return json.loads(target.read_text())
    if not re.search(rf"export (interface|type) {type_name}\b", (packages / source).read_text()):
        return None
    target.parent.mkdir(exist_ok=True)
    scratch = target.with_suffix(f".{os.getpid()}.tmp")
    # --expose none: the veneer re-exports DataSourceRef under the name the raw types use,
    # which the generator refuses as two definitions of one name; inlining avoids naming.
    subprocess.run(["npx", "--no-install", "ts-json-schema-generator", "--path", source, "--type", type_name,
                    "--no-type-check", "--expose", "none", "--out", str(scratch)],
                   cwd=packages, check=True, capture_output=True, text=True)
    scratch.rename(target)
    return json.loads(target.read_text())


def dashboard_schema():
    return generated(DASHBOARD_TYPES, "Dashboard", "dashboard")


def panel_schema(plugin, type_name):
    """A panel plugin's Options or FieldConfig schema; None for an unknown plugin or type."""
    packages = installed()
    sources = sorted((packages / PANEL_TYPES / plugin / "panelcfg" / "x").glob("*PanelCfg_types.gen.d.ts"))
    if not sources:
        return None
    return generated(str(sources[0].relative_to(packages)), type_name, f"panel.{plugin}.{type_name}")


def without_required(schema):
    """The schema with no required properties anywhere: what Grafana merges defaults into."""
    if isinstance(schema, dict):
        return {k: without_required(v) for k, v in schema.items() if k != "required"}
    if isinstance(schema, list):
        return [without_required(v) for v in schema]
    return schema


def open_annotation_targets(schema):
    annotation = schema["definitions"]["Dashboard"]["properties"]["annotations"]["properties"]["list"]["items"]
    annotation["properties"]["target"]["additionalProperties"] = True
    return schema


def errors(dashboard):
    """Every way `dashboard` (a dict) departs from Grafana's schema, as readable lines."""
    found = []
    for e in jsonschema.Draft7Validator(open_annotation_targets(dashboard_schema())).iter_errors(dashboard):
        found.append(f"{e.json_path}: {e.message}")
    for i, panel in enumerate(dashboard.get("panels", [])):
        found += panel_errors(panel, f"$.panels[{i}]")
    return found


def panel_errors(panel, where):
    kind = panel.get("type")
    checked = {"Options": panel.get("options", {}),
               "FieldConfig": panel.get("fieldConfig", {}).get("defaults", {}).get("custom", {})}
    found = []
    for type_name, value in checked.items():
        schema = panel_schema(kind, type_name)
        if schema is None:
            # A plugin without custom field config takes none.
            found += [f"{where}: no {type_name} in Grafana {GRAFANA_SCHEMA_VERSION}'s panel plugin `{kind}`"] if value else []
            continue
        for e in jsonschema.Draft7Validator(without_required(schema)).iter_errors(value):
            found.append(f"{where} {kind} {type_name}{e.json_path[1:]}: {e.message}")
    return found


def main(argv):
    if not shutil.which("npx"):
        sys.exit("npx (Node.js) is needed to generate Grafana's schema")
    if not argv:
        dashboard_schema()
        print(installed() / "schemas")
        return
    failed = False
    for name in argv:
        for line in errors(json.loads(Path(name).read_text())):
            failed = True
            print(f"{name}: {line}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main(sys.argv[1:])
