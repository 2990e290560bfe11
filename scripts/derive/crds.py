"""``data/crds.json``: group, kind, plural, scope and served versions of every upstream CRD we render
or install.

The render-to-directory Kubernetes provider cannot ask a cluster whether a kind is namespaced;
these facts let the program tell it (see components/render_mode.py).
"""

from __future__ import annotations

from pathlib import Path

from greenops.catalog.schema import CrdsFile

from .common import SCHEMA_VERSION, DataFile, load_yaml

FILE = DataFile("crds.json", CrdsFile)


def derive(crd_dir: Path) -> dict:
    kinds = []
    for path in sorted(crd_dir.glob("*.yaml")):
        crd = load_yaml(path)
        spec = crd["spec"]
        kinds.append(
            {
                "name": crd["metadata"]["name"],
                "group": spec["group"],
                "kind": spec["names"]["kind"],
                "plural": spec["names"]["plural"],
                "singular": spec["names"].get("singular", spec["names"]["kind"].lower()),
                "scope": spec["scope"],
                "served": [v["name"] for v in spec["versions"] if v.get("served")],
                "storage": next(v["name"] for v in spec["versions"] if v.get("storage")),
            }
        )
    return {"schemaVersion": SCHEMA_VERSION, "kinds": kinds}
