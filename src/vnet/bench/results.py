"""The recorded outcome of one benchmark run: parameters, environment, raw samples.

A :class:`BenchResult` is what every ``vnet bench ...`` command fills in and what
``vnet bench report FILE.json`` reads back. Only raw samples are authoritative;
the summaries written next to them in the JSON are for readers (jq, humans) and
are recomputed on load, so a report can always be regenerated from samples.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import os
import platform
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args

import vnet

from .stats import Summary, summarize

SCHEMA = "vnet.bench.result/1"

PlotKind = Literal["auto", "line", "bar"]
X = int | float | str | None  # the independent variable of a point (offered load, size, ...)


class ResultFormatError(ValueError):
    """A results file that does not follow the schema."""


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Metric:
    """What is measured: unit and how to plot it. Series of it share one figure."""

    name: str
    unit: str = ""
    x_label: str | None = None  # e.g. "offered load (Mbit/s)"; None: no x axis
    description: str = ""
    plot: PlotKind = "auto"  # auto: line against a numeric x, else grouped bars


@dataclass
class Measurement:
    """The raw samples (one per repeat) of one metric, for one series, at one x."""

    metric: str
    series: str  # the line / bar group, e.g. the path kind "native", "vr", "vxlan"
    x: X = None
    samples: list[float] = field(default_factory=list)

    def summary(self) -> Summary:
        """Statistics of the samples; raises EmptySampleError when there are none."""
        return summarize(self.samples)


@dataclass
class BenchResult:
    """Everything one benchmark run produced; round-trips through JSON."""

    name: str
    parameters: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    baseline: str | None = None  # series the ratio columns divide by
    description: str = ""
    command: list[str] | None = None
    started: str = field(default_factory=utc_now)
    finished: str | None = None
    metrics: dict[str, Metric] = field(default_factory=dict)
    measurements: list[Measurement] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. failed runs, shown in the report

    @classmethod
    def start(
        cls,
        name: str,
        *,
        parameters: Mapping[str, Any] | None = None,
        tools: Mapping[str, str | None] | None = None,
        baseline: str | None = None,
        description: str = "",
    ) -> BenchResult:
        """A new result stamped with the current time, command line and environment."""
        return cls(
            name=name,
            parameters=dict(parameters or {}),
            environment=environment(tools),
            baseline=baseline,
            description=description,
            command=list(sys.argv),
        )

    # -- filling in -------------------------------------------------------------

    def declare(
        self,
        name: str,
        unit: str = "",
        *,
        x_label: str | None = None,
        description: str = "",
        plot: PlotKind = "auto",
    ) -> Metric:
        """Declare (or redeclare) a metric; declaration order is report order."""
        if plot not in get_args(PlotKind):
            raise ValueError(f"plot must be one of {get_args(PlotKind)}, got {plot!r}")
        metric = Metric(name=name, unit=unit, x_label=x_label, description=description, plot=plot)
        self.metrics[name] = metric
        return metric

    def add(
        self, metric: str, series: str, samples: Iterable[float], *, x: X = None
    ) -> Measurement:
        """Append samples to the (metric, series, x) measurement, creating it if new."""
        values = [_check_sample(v, metric, series, x) for v in samples]
        _check_x(x)
        found = self.get(metric, series, x)
        if found is None:
            self.metrics.setdefault(metric, Metric(name=metric))
            found = Measurement(metric=metric, series=series, x=x)
            self.measurements.append(found)
        found.samples.extend(values)
        return found

    def record(self, metric: str, series: str, value: float, *, x: X = None) -> Measurement:
        """Append one sample (one repeat) to the (metric, series, x) measurement."""
        return self.add(metric, series, [value], x=x)

    def note(self, text: str) -> None:
        """Keep a remark for the report, e.g. a run that failed and was not counted."""
        self.notes.append(text)

    def finish(self) -> None:
        """Stamp the end time (once)."""
        if self.finished is None:
            self.finished = utc_now()

    # -- reading ----------------------------------------------------------------

    def get(self, metric: str, series: str, x: X = None) -> Measurement | None:
        for m in self.measurements:
            # Plain ==: 100 and 100.0 are the same offered load, "100" (a label) is not.
            if m.metric == metric and m.series == series and m.x == x:
                return m
        return None

    def metric_names(self) -> list[str]:
        """Declared metrics first (declaration order), then any others as they appeared."""
        names = list(self.metrics)
        for m in self.measurements:
            if m.metric not in names:
                names.append(m.metric)
        return names

    def metric_info(self, name: str) -> Metric:
        return self.metrics.get(name) or Metric(name=name)

    def series_names(self, metric: str | None = None) -> list[str]:
        """Series in order of first appearance; the baseline, if present, comes first."""
        names: list[str] = []
        for m in self.measurements:
            if (metric is None or m.metric == metric) and m.series not in names:
                names.append(m.series)
        if self.baseline in names:
            names.remove(self.baseline)
            names.insert(0, self.baseline)
        return names

    def measurements_of(self, metric: str) -> list[Measurement]:
        return [m for m in self.measurements if m.metric == metric]

    # -- JSON -------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "name": self.name,
            "description": self.description,
            "started": self.started,
            "finished": self.finished,
            "command": self.command,
            "baseline": self.baseline,
            "parameters": self.parameters,
            "environment": self.environment,
            "metrics": {n: _metric_to_dict(m) for n, m in self.metrics.items()},
            "measurements": [_measurement_to_dict(m) for m in self.measurements],
            "notes": self.notes,
        }

    def to_json(self, indent: int | None = 2) -> str:
        # allow_nan=False: the file must stay strict JSON for other tools.
        return json.dumps(self.to_dict(), indent=indent, default=_jsonable, allow_nan=False) + "\n"

    def save(self, path: str | os.PathLike[str]) -> Path:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(self.to_json(), encoding="utf-8")
        return target

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BenchResult:
        if not isinstance(data, Mapping):
            raise ResultFormatError("results must be a JSON object")
        schema = data.get("schema")
        if schema != SCHEMA:
            raise ResultFormatError(f"unsupported schema {schema!r}, expected {SCHEMA!r}")
        name = data.get("name")
        if not isinstance(name, str) or not name:
            raise ResultFormatError("'name' must be a non-empty string")
        metrics = {}
        for key, raw in (data.get("metrics") or {}).items():
            metrics[key] = _metric_from_dict(key, raw)
        result = cls(
            name=name,
            parameters=dict(data.get("parameters") or {}),
            environment=dict(data.get("environment") or {}),
            baseline=data.get("baseline"),
            description=data.get("description") or "",
            command=data.get("command"),
            started=data.get("started") or "",
            finished=data.get("finished"),
            metrics=metrics,
            notes=list(data.get("notes") or []),
        )
        raw_measurements = data.get("measurements")
        if not isinstance(raw_measurements, list):
            raise ResultFormatError("'measurements' must be a list")
        for i, raw in enumerate(raw_measurements):
            result.measurements.append(_measurement_from_dict(i, raw))
        return result

    @classmethod
    def from_json(cls, text: str) -> BenchResult:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ResultFormatError(f"not JSON: {err}") from err
        return cls.from_dict(data)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> BenchResult:
        return cls.from_json(Path(path).read_text(encoding="utf-8"))


# -- (de)serialisation helpers ---------------------------------------------------


def _check_sample(value: Any, metric: str, series: str, x: X) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{metric}/{series}@{x}: sample must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{metric}/{series}@{x}: sample must be finite, got {value!r}")
    return number


def _check_x(x: Any) -> None:
    if isinstance(x, bool) or not (x is None or isinstance(x, int | float | str)):
        raise TypeError(f"x must be a number, a string or None, got {x!r}")
    if isinstance(x, float) and not math.isfinite(x):
        raise ValueError(f"x must be finite, got {x!r}")


def _metric_to_dict(m: Metric) -> dict[str, Any]:
    d = dataclasses.asdict(m)
    del d["name"]  # the key in "metrics"
    return d


def _metric_from_dict(name: str, raw: Any) -> Metric:
    if not isinstance(raw, Mapping):
        raise ResultFormatError(f"metric {name!r} must be an object")
    plot = raw.get("plot", "auto")
    if plot not in get_args(PlotKind):
        raise ResultFormatError(f"metric {name!r}: plot must be one of {get_args(PlotKind)}")
    return Metric(
        name=name,
        unit=raw.get("unit") or "",
        x_label=raw.get("x_label"),
        description=raw.get("description") or "",
        plot=plot,
    )


def _measurement_to_dict(m: Measurement) -> dict[str, Any]:
    try:
        summary: dict[str, Any] | None = m.summary().to_dict()
    except ValueError:
        summary = None
    return {
        "metric": m.metric,
        "series": m.series,
        "x": m.x,
        "samples": m.samples,
        "summary": summary,
    }


def _measurement_from_dict(index: int, raw: Any) -> Measurement:
    where = f"measurements[{index}]"
    if not isinstance(raw, Mapping):
        raise ResultFormatError(f"{where} must be an object")
    metric, series, x = raw.get("metric"), raw.get("series"), raw.get("x")
    if not isinstance(metric, str) or not isinstance(series, str):
        raise ResultFormatError(f"{where}: 'metric' and 'series' must be strings")
    try:
        _check_x(x)
        samples = [_check_sample(v, metric, series, x) for v in raw.get("samples", [])]
    except (TypeError, ValueError) as err:
        raise ResultFormatError(f"{where}: {err}") from err
    # "summary" is derived and deliberately ignored: samples are the record.
    return Measurement(metric=metric, series=series, x=x, samples=samples)


def _jsonable(obj: Any) -> Any:
    """Fallback for parameters that are not plain JSON (paths, enums, sets, dataclasses)."""
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, set | frozenset):
        return sorted(obj, key=str)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    return str(obj)


# -- environment -----------------------------------------------------------------


def environment(
    tools: Mapping[str, str | None] | None = None,
    *,
    proc: Path = Path("/proc"),
) -> dict[str, Any]:
    """Describe the machine a benchmark ran on; missing facts are None, never errors.

    ``tools`` maps external tool names to their version strings (see
    :func:`tool_version`); they are stored as given.
    """
    uname = platform.uname()
    cpuinfo = _read_text(proc / "cpuinfo")
    meminfo = _read_text(proc / "meminfo")
    return {
        "os": uname.system,
        "kernel": uname.release,
        "kernel_build": uname.version,
        "machine": uname.machine,
        "cpu_model": cpu_model(cpuinfo) or platform.processor() or None,
        "cpu_logical": os.cpu_count(),
        "cpu_physical": physical_cores(cpuinfo),
        "cpu_usable": _usable_cpus(),
        "cpu_governor": _read_text(
            Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
        ).strip()
        or None,
        "memory_total_bytes": mem_total_bytes(meminfo),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "vnet": vnet.__version__,
        "vnet_git": _vnet_git_describe(),
        "tools": dict(tools or {}),
    }


def cpu_model(cpuinfo: str) -> str | None:
    """The CPU model from /proc/cpuinfo text (x86 "model name"; ARM/others as fallback)."""
    for key in ("model name", "cpu model", "Model", "Hardware", "Processor", "cpu"):
        for line in cpuinfo.splitlines():
            name, sep, value = line.partition(":")
            if sep and name.strip() == key and value.strip():
                return value.strip()
    return None


def physical_cores(cpuinfo: str) -> int | None:
    """Distinct (physical id, core id) pairs in /proc/cpuinfo; None if not reported."""
    cores: set[tuple[str, str]] = set()
    package = core = None
    for line in [*cpuinfo.splitlines(), ""]:
        name, _, value = line.partition(":")
        name = name.strip()
        if name == "physical id":
            package = value.strip()
        elif name == "core id":
            core = value.strip()
        elif not line.strip():  # blank line ends one processor's block
            if package is not None and core is not None:
                cores.add((package, core))
            package = core = None
    return len(cores) or None


def mem_total_bytes(meminfo: str) -> int | None:
    """MemTotal from /proc/meminfo text, in bytes."""
    for line in meminfo.splitlines():
        if line.startswith("MemTotal:"):
            fields = line.split()
            factor = 1024 if len(fields) > 2 and fields[2].lower() == "kb" else 1
            return int(fields[1]) * factor
    return None


def tool_version(argv: Sequence[str], timeout: float = 5.0) -> str | None:
    """First non-empty output line of e.g. ``["iperf3", "--version"]``; None if unavailable."""
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    for line in (done.stdout + "\n" + done.stderr).splitlines():
        if line.strip():
            return line.strip()
    return None


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _usable_cpus() -> int | None:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def _vnet_git_describe() -> str | None:
    # The package version does not move between commits of a checkout; the commit does.
    source = Path(vnet.__file__).resolve().parent
    try:
        done = subprocess.run(
            ["git", "-C", str(source), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None
