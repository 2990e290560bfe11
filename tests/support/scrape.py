"""A scrape of a real server's /metrics, parsed with prometheus-client's own parser."""

from __future__ import annotations

from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True)
class Scrape:
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float]
    families: set[str]

    def value(self, name: str, **labels: str) -> float | None:
        """The sample ``name`` with exactly these labels; None when it is not exposed."""
        return self.samples.get((name, frozenset(labels.items())))

    def by(self, name: str, label: str, **where: str) -> dict[str, float]:
        """Every ``name`` sample whose labels include ``where``, as {its ``label``: value}."""
        out = {}
        for (sample, labels), v in self.samples.items():
            d = dict(labels)
            if sample == name and all(d.get(k) == w for k, w in where.items()):
                out[d[label]] = v
        return out

    def series(self, prefix: str = "greenops_") -> int:
        return sum(1 for name, _ in self.samples if name.startswith(prefix))


def scrape(url: str, token: str) -> Scrape:
    r = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=15)
    assert r.status_code == 200, r.text
    samples, families = {}, set()
    for family in text_string_to_metric_families(r.text):
        families.add(family.name)
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return Scrape(samples, families)
