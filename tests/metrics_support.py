"""Reading a /metrics answer as Prometheus does: prometheus_client's own text parser."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    """(sample name, its labels) -> value, for every sample of the exposition."""
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sample `name` with exactly `labels`; 0 when absent (a counter not yet touched)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def label_values(samples: Samples, label: str) -> set[str]:
    """Every value `label` takes in any sample."""
    return {v for _, labels in samples for k, v in labels if k == label}
