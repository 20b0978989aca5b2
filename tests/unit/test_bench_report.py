"""Results JSON, environment, Markdown/PNG reports and the shared bench CLI pieces."""

from __future__ import annotations

import io
import json
import struct
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from rich.console import Console

from vnet.bench.contract import Defaults
from vnet.bench.progress import BenchOptions, BenchProgress
from vnet.bench.report import (
    default_out_dir,
    finish_run,
    format_mean_ci,
    format_number,
    plot_kind,
    render_markdown,
    write_report,
)
from vnet.bench.results import (
    SCHEMA,
    BenchResult,
    ResultFormatError,
    cpu_model,
    environment,
    mem_total_bytes,
    physical_cores,
    tool_version,
)
from vnet.bench.stats import summarize
from vnet.cli.bench_cmds import common_from, common_options, report_cmd

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# What a bench run writes, trimmed to what matters: raw samples only (no summaries).
RECORDED = {
    "schema": SCHEMA,
    "name": "dataplane",
    "started": "2025-03-04T05:06:07Z",
    "finished": "2025-03-04T05:16:07Z",
    "command": ["vnet", "bench", "dataplane", "--repeat", "10"],
    "baseline": "physical",
    "parameters": {"duration": 10.0, "repeat": 10, "quick": False},
    "environment": {
        "kernel": "6.1.0-test",
        "cpu_model": "Test CPU",
        "cpu_logical": 8,
        "memory_total_bytes": 17179869184,
        "tools": {"iperf3": "iperf 3.12"},
    },
    "metrics": {
        "throughput": {"unit": "Mbit/s", "x_label": "offered load (Mbit/s)"},
        "pps": {"unit": "packets/s", "plot": "bar"},
    },
    "measurements": [
        {
            "metric": "throughput",
            "series": "physical",
            "x": 100,
            "samples": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
        },
        {
            "metric": "throughput",
            "series": "vr",
            "x": 100,
            "samples": [2, 4, 6, 8, 10, 12, 14, 16, 18, 20],
        },
        {"metric": "throughput", "series": "physical", "x": 200, "samples": [190, 200, 210]},
        {"metric": "throughput", "series": "vr", "x": 200, "samples": [150]},
        {"metric": "pps", "series": "physical", "samples": [1.0e6, 1.1e6, 0.9e6]},
        {"metric": "pps", "series": "vr", "samples": [8.0e5, 8.2e5, 7.8e5]},
    ],
    "notes": ["vr @ 200 Mbit/s: 2 of 3 runs timed out and were not counted"],
}


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    path = tmp_path / "recorded" / "results.json"
    path.parent.mkdir()
    path.write_text(json.dumps(RECORDED, indent=2))
    return path


# -- results container -----------------------------------------------------------


def test_json_round_trip_keeps_everything() -> None:
    result = BenchResult(
        name="qos",
        parameters={"rate": "100mbit", "sizes": [64, 1500]},
        environment={"kernel": "x", "tools": {"tc": "iproute2-6.1"}},
        baseline="htb",
        description="HTB vs TBF",
    )
    result.declare("rate", "Mbit/s", x_label="configured rate (Mbit/s)", plot="line")
    result.add("rate", "htb", [99.1, 99.3], x=100)
    result.record("rate", "htb", 99.2, x=100.0)  # same point: 100 == 100.0
    result.record("rate", "tbf", 98.7, x=100)
    result.add("latency", "tbf", [0.12, 0.15], x="64B")
    result.note("one run dropped")
    result.finish()

    again = BenchResult.from_json(result.to_json())
    assert again == result
    htb = again.get("rate", "htb", 100)
    assert htb is not None and htb.samples == [99.1, 99.3, 99.2]
    assert again.get("latency", "tbf", "64B") is not None
    assert again.metric_names() == ["rate", "latency"]
    assert again.series_names() == ["htb", "tbf"]


def test_json_carries_summaries_for_readers_but_loads_from_samples() -> None:
    result = BenchResult.from_dict(RECORDED)
    data = json.loads(result.to_json())
    first = data["measurements"][0]
    assert first["summary"]["mean"] == pytest.approx(5.5)
    assert first["summary"]["ci95"] == pytest.approx(2.1659, abs=1e-3)
    first["summary"]["mean"] = 999.0  # a stale or edited summary is not trusted
    assert BenchResult.from_dict(data).measurements[0].summary().mean == pytest.approx(5.5)


def test_parameters_that_are_not_plain_json_are_stringified() -> None:
    result = BenchResult(name="x", parameters={"out": Path("/tmp/a"), "kinds": {"vr"}})
    assert json.loads(result.to_json())["parameters"] == {"out": "/tmp/a", "kinds": ["vr"]}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"schema": "other/9"}, "unsupported schema"),
        ({"name": ""}, "name"),
        ({"measurements": {}}, "must be a list"),
        (
            {"measurements": [{"metric": "m", "series": "s", "samples": ["1"]}]},
            r"measurements\[0\]",
        ),
        ({"metrics": {"m": {"plot": "pie"}}}, "plot"),
    ],
)
def test_malformed_results_are_rejected_with_a_reason(change: dict, message: str) -> None:
    with pytest.raises(ResultFormatError, match=message):
        BenchResult.from_dict({**RECORDED, **change})
    with pytest.raises(ResultFormatError, match="not JSON"):
        BenchResult.from_json("{")


def test_bad_samples_are_refused_when_recorded() -> None:
    result = BenchResult(name="x")
    with pytest.raises(ValueError, match="finite"):
        result.record("m", "s", float("nan"))
    with pytest.raises(TypeError, match="number"):
        result.record("m", "s", True)
    with pytest.raises(TypeError, match="x must be"):
        result.record("m", "s", 1.0, x=[1])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="plot"):
        result.declare("m", plot="pie")  # type: ignore[arg-type]
    assert result.measurements == []


def test_baseline_series_is_listed_first() -> None:
    result = BenchResult(name="x", baseline="native")
    result.record("m", "vr", 1.0)
    result.record("m", "native", 1.0)
    assert result.series_names() == ["native", "vr"]


# -- environment -----------------------------------------------------------------

CPUINFO_X86 = """processor\t: 0
model name\t: Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz
physical id\t: 0
core id\t\t: 0

processor\t: 1
model name\t: Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz
physical id\t: 0
core id\t\t: 0

processor\t: 2
model name\t: Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz
physical id\t: 0
core id\t\t: 1
"""


def test_cpuinfo_and_meminfo_parsing() -> None:
    assert cpu_model(CPUINFO_X86) == "Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz"
    assert physical_cores(CPUINFO_X86) == 2  # hyperthread siblings share a core id
    assert cpu_model("processor : 0\nBogoMIPS : 50.00\nModel : Raspberry Pi 4\n") == (
        "Raspberry Pi 4"
    )
    assert cpu_model("") is None and physical_cores("processor : 0\n") is None
    assert mem_total_bytes("MemTotal:       16318480 kB\nMemFree: 1 kB\n") == 16318480 * 1024
    assert mem_total_bytes("") is None


def test_environment_reads_proc_and_keeps_tool_versions(tmp_path: Path) -> None:
    (tmp_path / "cpuinfo").write_text(CPUINFO_X86)
    (tmp_path / "meminfo").write_text("MemTotal: 2048 kB\n")
    env = environment({"iperf3": "iperf 3.12", "trafgen": None}, proc=tmp_path)
    assert env["cpu_model"].startswith("Intel(R) Xeon(R)")
    assert env["cpu_physical"] == 2
    assert env["memory_total_bytes"] == 2048 * 1024
    assert env["tools"] == {"iperf3": "iperf 3.12", "trafgen": None}
    assert env["python"].count(".") == 2
    assert env["vnet"]
    for key in ("kernel", "machine", "cpu_logical", "cpu_usable"):
        assert key in env
    json.dumps(env)  # must be storable as is


def test_environment_survives_a_missing_proc(tmp_path: Path) -> None:
    env = environment(proc=tmp_path / "absent")
    assert env["memory_total_bytes"] is None and env["cpu_physical"] is None


def test_tool_version_first_line_or_none() -> None:
    assert (tool_version([sys.executable, "--version"]) or "").startswith("Python 3.")
    assert tool_version(["/nonexistent/vnet-no-such-tool", "--version"]) is None


# -- formatting and layout -------------------------------------------------------


def test_number_formatting() -> None:
    assert format_number(5.5) == "5.500"
    assert format_number(941234.4) == "941234"
    assert format_number(0.01234) == "0.01234"
    assert format_number(0.0) == "0"
    assert format_mean_ci(summarize(range(1, 11))) == "5.500 ± 2.166"
    assert format_mean_ci(summarize([7.0])) == "7.000 (n = 1, no CI)"


def test_default_out_dir_uses_name_and_start_time() -> None:
    result = BenchResult.from_dict(RECORDED)
    assert default_out_dir(result) == Path("out/bench/dataplane-20250304T050607Z")
    assert default_out_dir(result, Path("/r")) == Path("/r/dataplane-20250304T050607Z")


def test_plot_kind_follows_x_and_declaration() -> None:
    result = BenchResult.from_dict(RECORDED)
    assert plot_kind(result, "throughput") == "line"
    assert plot_kind(result, "pps") == "bar"
    result.record("size", "vr", 1.0, x="64B")
    result.record("size", "vr", 1.0, x="1500B")
    assert plot_kind(result, "size") == "bar"


# -- report generation -----------------------------------------------------------


def test_report_from_recorded_samples(recorded: Path, tmp_path: Path) -> None:
    result = BenchResult.load(recorded)
    paths = write_report(result, tmp_path / "report")
    md = paths.markdown.read_text()

    assert paths.json is not None and BenchResult.load(paths.json) == result
    assert md.startswith("# vnet bench dataplane\n")
    assert "| offered load (Mbit/s) | series | n | mean ± 95% CI (Mbit/s) |" in md
    assert "ratio to physical |" in md
    # samples 1..10: mean 5.5, CI 2.166, p50 5.5, p90 9.1, p99 9.91
    assert (
        "| 100 | physical | 10 | 5.500 ± 2.166 | 3.028 | 1.000 | 5.500 | 9.100 | "
        "9.910 | 10.00 | 1 (baseline) |" in md
    )
    # 2 * (1..10): twice the baseline, relative CIs equal -> 2 * sqrt(2) * 2.1659 / 5.5
    assert "| 100 | vr | 10 | 11.00 ± 4.33 |" in md
    assert "| 2.000 ± 1.114 |" in md
    assert "| 200 | vr | 1 | 150.0 (n = 1, no CI) | n/a |" in md
    assert "0.750 (no CI)" in md
    assert "| physical | 3 | 1000000 ± 248414 |" in md
    assert "| vr | 3 | 800000 ± 49683 |" in md
    assert "![throughput](throughput.png)" in md and "![pps](pps.png)" in md
    assert "| tool: iperf3 | iperf 3.12 |" in md
    assert "| memory_total_bytes | 16.0 GiB (17179869184 bytes) |" in md
    assert "| repeat | 10 |" in md
    assert "2 of 3 runs timed out" in md
    assert "Student t" in md and "n = 1" in md

    assert set(paths.plots) == {"throughput", "pps"}
    for png in paths.plots.values():
        assert png.parent == paths.directory
        assert png.stat().st_size > 10_000, f"{png} looks empty"
        assert _png_size(png) == (960, 600)


def test_grouped_bars_for_categorical_x(tmp_path: Path) -> None:
    result = BenchResult(name="forwarding", baseline="native")
    result.declare("rate", "kpps", x_label="frame size")
    for size, base in (("64B", 800.0), ("512B", 600.0), ("1500B", 300.0)):
        result.add("rate", "native", [base, base * 1.02, base * 0.98], x=size)
        result.add("rate", "vr", [base * 0.9, base * 0.91], x=size)
    paths = write_report(result, tmp_path)
    assert _png_size(paths.plots["rate"]) == (960, 600)
    md = paths.markdown.read_text()
    assert md.index("| 64B | native") < md.index("| 512B | native") < md.index("| 1500B |")


def test_metric_without_samples_is_tabled_not_plotted(tmp_path: Path) -> None:
    result = BenchResult(name="sdn")
    result.declare("latency", "ms")
    result.add("latency", "flowvisor", [])  # every run failed
    paths = write_report(result, tmp_path)
    assert paths.plots == {}
    assert "| flowvisor | 0 | no samples |" in paths.markdown.read_text()


def test_render_markdown_without_plots_or_json() -> None:
    md = render_markdown(BenchResult.from_dict(RECORDED), json_name=None)
    assert "![" not in md and "results.json" not in md


# -- vnet bench report -----------------------------------------------------------


def test_report_cmd_regenerates_next_to_the_record(recorded: Path) -> None:
    before = recorded.read_bytes()
    run = CliRunner().invoke(report_cmd, [str(recorded), "--out", str(recorded.parent)])
    assert run.exit_code == 0, run.output
    assert recorded.read_bytes() == before  # the record is never rewritten
    assert (recorded.parent / "report.md").exists()
    assert (recorded.parent / "throughput.png").exists()
    assert str(recorded.parent / "report.md") in run.output


def test_report_cmd_default_directory_and_baseline_override(
    recorded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    run = CliRunner().invoke(report_cmd, [str(recorded), "--baseline", "vr"])
    assert run.exit_code == 0, run.output
    out = tmp_path / "out/bench/dataplane-20250304T050607Z"
    assert "ratio to vr" in (out / "report.md").read_text()
    assert BenchResult.load(out / "results.json").baseline == "vr"


def test_report_cmd_errors(recorded: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "nope"}')
    run = CliRunner().invoke(report_cmd, [str(bad)])
    assert run.exit_code != 0 and "unsupported schema" in run.output
    run = CliRunner().invoke(
        report_cmd, [str(recorded), "--baseline", "nope", "--out", str(tmp_path / "o")]
    )
    assert run.exit_code != 0 and "no series 'nope'" in run.output


# -- shared options, progress, end of run ----------------------------------------


def _options_probe(defaults: Defaults | None = None) -> click.Command:
    defaults = defaults or Defaults(repeat=5, quick_repeat=2, duration=10.0, quick_duration=1.0)

    @click.option("--kind", default="vr")
    def probe(**kwargs: object) -> None:
        bench = common_from(kwargs, defaults)  # type: ignore[arg-type]
        click.echo(
            json.dumps(
                {
                    **bench.as_parameters(),
                    "out": str(bench.out),
                    "json": bench.json_path,
                    "quiet": bench.quiet,
                    "kind": kwargs["kind"],
                }
            )
        )

    for option in reversed(common_options(defaults)):
        probe = option(probe)
    return click.command()(probe)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], {"quick": False, "duration": 10.0, "repeat": 5}),
        (["--quick"], {"quick": True, "duration": 1.0, "repeat": 2}),
        (["--quick", "--repeat", "3"], {"quick": True, "duration": 1.0, "repeat": 3}),
        (["--duration", "0.5"], {"quick": False, "duration": 0.5, "repeat": 5}),
    ],
)
def test_bench_options(args: list[str], expected: dict) -> None:
    run = CliRunner().invoke(_options_probe(), args)
    assert run.exit_code == 0, run.output
    got = json.loads(run.output)
    assert {k: got[k] for k in expected} == expected
    assert got["kind"] == "vr" and got["quiet"] is False and got["json"] is None


def test_bench_options_reject_nonsense_and_document_themselves() -> None:
    probe = _options_probe()
    assert CliRunner().invoke(probe, ["--repeat", "0"]).exit_code == 2
    assert CliRunner().invoke(probe, ["--duration", "0"]).exit_code == 2
    helptext = CliRunner().invoke(probe, ["--help"]).output
    for option in ("--quick", "--duration", "--repeat", "--out", "--json", "--quiet"):
        assert option in helptext


def test_bench_options_without_duration_have_no_duration_flag() -> None:
    probe = _options_probe(Defaults(repeat=1, quick_repeat=1))
    helptext = CliRunner().invoke(probe, ["--help"]).output
    assert "--duration" not in helptext and "--quick" in helptext and "-q" in helptext
    assert json.loads(CliRunner().invoke(probe, ["--quick"]).output)["repeat"] == 1


def _console() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, force_terminal=True, width=100), buffer


def test_progress_bar_counts_and_logs() -> None:
    console, buffer = _console()
    with BenchProgress("dataplane", total=3, console=console, show_bar=True) as progress:
        for run in range(3):
            progress.update(f"vr run {run + 1}/3")
            progress.advance()
        progress.log("vr done")
    assert progress.completed == 3
    assert "vr done" in buffer.getvalue() and "3/3" in buffer.getvalue()


def test_progress_quiet_prints_nothing() -> None:
    console, buffer = _console()
    with BenchProgress("x", total=1, console=console, quiet=True) as progress:
        progress.advance()
        progress.log("hidden")
    assert buffer.getvalue() == ""


def test_progress_without_terminal_has_no_bar_but_logs() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=False)
    with BenchProgress("x", total=2, console=console) as progress:
        progress.advance(2)
        progress.log("plain line")
    assert not progress.show_bar
    assert buffer.getvalue() == "plain line\n"


def test_finish_run_writes_report_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = BenchResult.from_dict({**RECORDED, "finished": None})
    options = BenchOptions(
        quick=True, duration=1.0, repeat=2, out=tmp_path / "o", json_path="-", quiet=False
    )
    console, buffer = _console()
    paths = finish_run(result, options, console=console)
    assert result.finished is not None
    assert paths.markdown.exists() and paths.directory == tmp_path / "o"
    assert BenchResult.from_json(capsys.readouterr().out) == result
    assert "report:" in buffer.getvalue() and "5.500 ± 2.166" in buffer.getvalue()

    copy = tmp_path / "copy.json"
    quiet = BenchOptions(
        quick=True, duration=1.0, repeat=2, out=tmp_path / "q", json_path=str(copy), quiet=True
    )
    console, buffer = _console()
    finish_run(result, quiet, console=console)
    assert BenchResult.load(copy) == result and buffer.getvalue() == ""


def test_the_report_writer_loads_matplotlib_only_to_draw() -> None:
    """Importing it costs every benchmark and the tests' collection 0.6 s more otherwise."""
    program = (
        "import sys\nimport vnet.bench.report, vnet.bench.controller.figures\n"
        "print('matplotlib' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
