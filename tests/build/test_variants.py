"""tools/build/variants.py: the real sources built into the Hub layout, checked by the tools of that ecosystem.

One session build (sm_90 only, to keep CI short) from two torch environments: this venv's torch 2.14.1 (CUDA 13.0)
and the CPU-only torch 2.13.0. That gives torch214-cxx11-cu130, torch213-cxx11-cpu and the stable-ABI variants
torch-stable-abi210-{cu130,cpu}. Every variant goes through kernel-abi-check and the real ``kernels`` library
(in a venv with the matching torch), and one round trip runs source → Hub (olah) → hub2wheel → pip → op.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import kernel_abi_check
import pytest
from packaging.version import Version as pv

from kernelwheel.format.digests import verify_digest
from kernelwheel.format.variant_folder import collect_files, read_metadata
from kernelwheel.io.errors import BuildFailed
from kernelwheel.publish.git_transport import GitTransport
from kernelwheel.publish.release import publish
from kernelwheel.wheels.naming import WheelName
from tests.helpers.elf import demangled, dynamic_symbols
from tests.helpers.git_remotes import make_remote
from tests.helpers.hub_fixtures import olah_server, pip_install_by_name
from tests.helpers.repo import REPO_ROOT
from tests.helpers.venvs import fresh_venv, package_farm
from tools.build.variants import TorchEnv, build_id, plan_variants

pytestmark = pytest.mark.slow

CUDA_CLASSIC = "torch214-cxx11-cu130-x86_64-linux"
CUDA_STABLE = "torch-stable-abi210-cu130-x86_64-linux"
CPU_CLASSIC = "torch213-cxx11-cpu-x86_64-linux"
CPU_STABLE = "torch-stable-abi210-cpu-x86_64-linux"
ALL = (CUDA_CLASSIC, CUDA_STABLE, CPU_CLASSIC, CPU_STABLE)

# Runs in a venv: gets the op (LOAD_WITH_KERNELS or LOAD_INSTALLED) and checks it against the exact formulas.
OP_CHECK = r"""
import json, sys, torch
{load}
x = torch.randint(0, 256, (3, 31, 37, 3), dtype=torch.uint8)
v = x.to(torch.int64)
expected = ((v[..., 0] * 19595 + v[..., 1] * 38470 + v[..., 2] * 7471 + 32768) >> 16).to(torch.uint8)
f = torch.rand(2, 9, 11, 3)
ok = torch.equal(kernel.img2gray(x), expected) and torch.equal(
    kernel.img2gray(f), ((0.299 * f[..., 0] + 0.587 * f[..., 1]) + 0.114 * f[..., 2]))
info = kernel.build_info()
print(json.dumps({{"ok": ok, "module": kernel.__name__, "abi": info.abi, "backend": info.backend,
                  "namespace": info.ops_namespace, "torch": torch.__version__}}))
"""
# A variant folder, or a whole build/ (kernels then picks the variant), given as argv[1].
KERNELS_CHECK = OP_CHECK.format(
    load="import kernels\nfrom pathlib import Path\n"
         "kernel = kernels.get_local_kernel(Path(sys.argv[1]), trust_remote_code=True)")
INSTALLED_CHECK = OP_CHECK.format(load="import img2gray as kernel")


@pytest.fixture(scope="session")
def variants_build(tmp_path_factory: pytest.TempPathFactory, torch213_base: Path) -> Path:
    out = tmp_path_factory.mktemp("variants") / "build"
    result = subprocess.run(
        [sys.executable, "-m", "tools.cli.build_variants", "--torch-env", sys.executable,
         "--torch-env", str(torch213_base), "--out", str(out)],
        cwd=REPO_ROOT, capture_output=True, text=True, env={**os.environ, "TORCH_CUDA_ARCH_LIST": "9.0"})
    assert result.returncode == 0, result.stderr[-3000:]
    return out


def run_json(python: Path | str, script: str, *args: str) -> dict[str, object]:
    result = subprocess.run([str(python), "-c", script, *args], capture_output=True, text=True, cwd="/")
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_an_interpreter_that_is_not_a_torch_python_is_one_line() -> None:
    with pytest.raises(BuildFailed) as info:
        TorchEnv.probe(Path("/usr/bin/true"))  # runs, exits 0, prints nothing: was a KeyError traceback
    assert str(info.value) == ("--torch-env /usr/bin/true: expected a Python that runs tools/build/torch_probe.py and "
                               "prints torch's VERSION and CUDA; it printed ''")


def test_plan_collapses_the_torch_axis_for_the_stable_abi() -> None:
    envs = [TorchEnv(Path("a"), *v) for v in ((pv("2.14.1"), "13.0"), (pv("2.11.0"), "13.0"), (pv("2.13.0"), None))]
    plans = {str(p.variant): p for p in plan_variants(envs, ("classic", "stable"), "2.10")}
    assert sorted(plans) == sorted(["torch214-cxx11-cu130-x86_64-linux", "torch211-cxx11-cu130-x86_64-linux",
                                    CPU_CLASSIC, CUDA_STABLE, CPU_STABLE])
    assert plans[CUDA_STABLE].env.torch == pv("2.14.1")  # built once, with the newest torch of that backend


def test_layout_names_and_digests(variants_build: Path) -> None:
    assert sorted(p.name for p in variants_build.iterdir()) == sorted(ALL)  # nothing else, no staging leftovers
    ident = build_id()
    ids = set()
    for name in ALL:
        folder = variants_build / name
        files = collect_files(folder, name)
        metadata = read_metadata(files, name)
        assert verify_digest(files, metadata, name)  # every file but metadata.json, sha256 in base64
        backend = "cpu" if "-cpu-" in name else "cuda"
        stable = "_stable" if "stable-abi" in name else ""
        expected_id = f"_img2gray_{backend}_{ident.replace('_dirty', '')}{stable}{'_dirty' if 'dirty' in ident else ''}"
        assert metadata["id"] == expected_id and metadata["id"] not in ids
        ids.add(metadata["id"])
        assert {"__init__.py", "_ops.py", "metadata.json", f"{expected_id}.abi3.so"} <= set(files)
        assert f'_NAMESPACE = "{expected_id}"' in (folder / "_ops.py").read_text()
        assert (metadata["name"], metadata["version"], metadata["license"]) == ("img2gray", 0, "Apache-2.0")
        assert metadata["backend"]["type"] == backend


@pytest.mark.parametrize("name", ALL)
def test_kernel_abi_check(variants_build: Path, name: str) -> None:
    (so,) = (variants_build / name).glob("*.abi3.so")
    binary = kernel_abi_check.ObjectFile(str(so))
    assert binary.check_python_abi("3.9") == []
    assert binary.check_manylinux("manylinux_2_28") == []
    if "stable-abi" in name:
        undefined, _ = dynamic_symbols(so)
        assert [s for s in demangled(undefined) if s.startswith(("at::", "c10::", "torch::"))] == []


def test_kernels_loads_the_cuda_variants_with_torch_214(variants_build: Path) -> None:
    for name in (CUDA_CLASSIC, CUDA_STABLE):
        result = run_json(sys.executable, KERNELS_CHECK, str(variants_build / name))
        assert result["ok"] and result["module"] == result["namespace"], result
    # Given the whole build/, kernels picks a variant itself: it prefers the stable ABI.
    picked = run_json(sys.executable, KERNELS_CHECK, str(variants_build.parent))
    assert (picked["ok"], picked["abi"], picked["backend"]) == (True, "stable", "cu130")


def test_kernels_loads_the_cpu_variants_with_cpu_torch_213(variants_build: Path, torch213_venv: Path) -> None:
    python = torch213_venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "kernels==0.17.2"], check=True)
    for name in (CPU_CLASSIC, CPU_STABLE):
        result = run_json(python, KERNELS_CHECK, str(variants_build / name))
        assert result["ok"] and result["torch"] == "2.13.0+cpu", result
    picked = run_json(python, KERNELS_CHECK, str(variants_build.parent))
    assert (picked["ok"], picked["abi"], picked["backend"]) == (True, "stable", "cpu")


def test_rebuild_is_incremental_and_keeps_the_log(variants_build: Path) -> None:
    before = {n: (variants_build / n / "metadata.json").read_bytes() for n in ALL}
    result = subprocess.run(
        [sys.executable, "-m", "tools.cli.build_variants", "--torch-env", sys.executable, "--abi", "stable",
         "--out", str(variants_build)],
        cwd=REPO_ROOT, capture_output=True, text=True, env={**os.environ, "TORCH_CUDA_ARCH_LIST": "9.0"})
    assert result.returncode == 0, result.stderr[-2000:]
    log = (REPO_ROOT / "build-cmake" / "variants" / CUDA_STABLE / "build.log").read_text()
    assert "ninja: no work to do." in log  # nothing recompiled
    assert (variants_build / CUDA_STABLE / "metadata.json").read_bytes() == before[CUDA_STABLE]


def test_round_trip_source_hub_wheel_pip_op(variants_build: Path, tmp_path: Path) -> None:
    """The real build published under v0.1.0, served by olah, fetched by hub2wheel, installed by pip, run."""
    remote = make_remote(tmp_path / "mirrors")
    result = publish(variants_build, "testorg/img2gray", "0.1.0", GitTransport.from_arg(str(remote)))
    assert set(result.variants) == set(ALL) and result.tag == "v0.1.0"
    wheelhouse = tmp_path / "wheelhouse"
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf-home")}
    env.pop("HF_TOKEN", None)
    with olah_server(tmp_path / "mirrors", tmp_path) as endpoint:
        convert = subprocess.run(
            [sys.executable, "-m", "tools.hub2wheel", "testorg/img2gray", "--version", ">=0.1,<0.2", "--trust-remote-code",
             "--out", str(wheelhouse)],
            cwd=REPO_ROOT, capture_output=True, text=True, env={**env, "HF_ENDPOINT": endpoint})
    assert convert.returncode == 0, convert.stderr[-3000:]
    # One wheel per variant; hub2wheel tags the platform from the binaries' glibc symbols (manylinux_2_24 here).
    parsed = [WheelName.parse(p.name) for p in wheelhouse.iterdir()]
    wheels = {(w.distribution, str(w.version), w.abi_tag) for w in parsed}
    assert wheels == {("img2gray-cu130", "0.1.0+torch2.14", "abi3"), ("img2gray-cu130", "0.1.0", "abi3"),
                      ("img2gray-cpu", "0.1.0+torch2.13", "abi3"), ("img2gray-cpu", "0.1.0", "abi3")}
    venv = fresh_venv(tmp_path / "venv", share_site_packages_of=package_farm(tmp_path / "torch-farm", "torch"))
    install = pip_install_by_name(venv, wheelhouse, "img2gray-cu130")
    assert install.returncode == 0, install.stdout + install.stderr
    check = run_json(venv / "bin" / "python", INSTALLED_CHECK)
    assert check["ok"] and check["torch"].startswith("2.14"), check
