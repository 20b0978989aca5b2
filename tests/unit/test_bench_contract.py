"""The Benchmark contract and the registry: every `vnet bench` command is built the same way."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from vnet.bench.contract import Benchmark, Defaults, Goal, Option, OptionError
from vnet.bench.progress import BenchOptions
from vnet.bench.registry import BENCHMARKS, get
from vnet.bench.results import BenchResult
from vnet.cli import main
from vnet.cli.bench_cmds import make_command

COMMON = ("--quick", "--repeat", "--out", "--json", "--quiet", "-q")


def test_the_registry_holds_every_benchmark_under_its_own_name() -> None:
    assert set(BENCHMARKS) == {
        "build",
        "dataplane",
        "forwarding",
        "qos",
        "netconf",
        "snmp",
        "sdn",
        "resources",
        "mgmt",
        "agent",
        "controller",
        "failover",
        "metrics",
    }
    for name, cls in BENCHMARKS.items():
        assert issubclass(cls, Benchmark) and cls.name == name
        assert cls.help.strip(), name
        assert isinstance(get(name), cls)


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_every_benchmark_command_has_the_common_options(name: str) -> None:
    done = CliRunner().invoke(main, ["bench", name, "--help"])
    assert done.exit_code == 0, done.output
    for option in COMMON:
        assert option in done.output, (name, option)
    for option in BENCHMARKS[name].options:
        assert option.flag in done.output, (name, option.flag)


def test_bench_build_help_shows_the_common_options() -> None:
    done = CliRunner().invoke(main, ["bench", "build", "--help"])
    assert done.exit_code == 0, done.output
    for option in (*COMMON, "--vrs", "--hosts"):
        assert option in done.output, option


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_own_options_do_not_shadow_the_common_ones(name: str) -> None:
    dests = [o.dest for o in BENCHMARKS[name].options]
    assert len(dests) == len(set(dests))
    assert not set(dests) & {"quick", "duration", "repeat", "out", "json_path", "quiet"}


@pytest.mark.parametrize("name", sorted(set(BENCHMARKS) - {"build"}))
def test_planning_with_the_defaults_needs_no_root_and_makes_nothing(name: str) -> None:
    bench = get(name)
    defaults = {o.dest: o.default for o in bench.options}
    common = BenchOptions(True, bench.defaults.quick_duration or 1.0, 1, None, None, True)
    assert bench.plan(common, **defaults) is not None


def test_listing_the_benchmarks_imports_no_bench_extra() -> None:
    program = (
        "import sys\nfrom click.testing import CliRunner\nfrom vnet.cli import main\n"
        "assert CliRunner().invoke(main, ['bench', '--help']).exit_code == 0\n"
        "for name in ('build', 'dataplane', 'sdn'):\n"
        "    assert CliRunner().invoke(main, ['bench', name, '--help']).exit_code == 0\n"
        "print(sorted(m for m in ('numpy', 'scipy', 'matplotlib') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


class EchoBench(Benchmark):
    """A benchmark that measures nothing: records its option as a sample."""

    name = "echo"
    help = "Record --value as one sample per repeat."
    defaults = Defaults(repeat=3, quick_repeat=1, duration=2.0, quick_duration=0.5)
    options = (Option("--value", "value", "float", default=1.0, minimum=0),)
    needs_root = False

    def plan(self, common: BenchOptions, value: float = 1.0) -> dict[str, Any]:
        if value > 100:
            raise OptionError("--value", "at most 100")
        return {"value": value}

    def run(self, plan: dict[str, Any], common: BenchOptions) -> BenchResult:
        result = BenchResult.start("echo", parameters=common.as_parameters())
        result.declare("value", "s")
        for _ in range(common.repeat):
            result.record("value", "echo", plan["value"] * common.duration)
        return result

    def goals(self, result: BenchResult) -> list[Goal]:
        return [Goal("a value", bool(result.get("value", "echo")), "recorded")]

    def finish(self, result: BenchResult, plan: Any, directory: Path) -> str:
        (directory / "extra.txt").write_text("more")
        return "finished"

    def headline(self, result: BenchResult) -> str:
        return f"echo: {len(result.measurements[0].samples)} sample(s)"


@pytest.mark.slow  # a whole (small) bench run with its figures: not in `make check`
def test_a_benchmark_runs_through_the_shared_command(tmp_path: Path) -> None:
    out, copy = tmp_path / "report", tmp_path / "copy.json"
    args = ["--quick", "--value", "3", "--out", str(out), "--json", str(copy)]
    done = CliRunner().invoke(make_command(EchoBench), args)
    assert done.exit_code == 0, done.output
    assert "echo: 1 sample(s)" in done.output and "finished" in done.output
    results = json.loads((out / "results.json").read_text())
    assert json.loads(copy.read_text()) == results
    assert results["measurements"][0]["samples"] == [1.5]  # 3 x the quick duration
    assert (out / "extra.txt").read_text() == "more"
    assert EchoBench().goals(BenchResult.load(out / "results.json"))[0].verdict == "met"


def test_quiet_hides_what_finish_shows_but_not_the_headline(tmp_path: Path) -> None:
    args = ["-q", "--repeat", "2", "--out", str(tmp_path)]
    done = CliRunner().invoke(make_command(EchoBench), args)
    assert done.exit_code == 0, done.output
    assert "echo: 2 sample(s)" in done.output and "finished" not in done.output


def test_an_option_error_names_the_option(tmp_path: Path) -> None:
    done = CliRunner().invoke(make_command(EchoBench), ["--value", "200", "--out", str(tmp_path)])
    assert done.exit_code == 2
    assert "--value" in done.output and "at most 100" in done.output


def test_without_the_bench_extra_a_benchmark_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "scipy" else real(name, *a)
    )
    done = CliRunner().invoke(make_command(EchoBench), ["--out", str(tmp_path)])
    assert done.exit_code == 1
    assert "vnet[bench]" in done.output and "scipy" in done.output
    assert not (tmp_path / "results.json").exists()
