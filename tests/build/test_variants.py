"""tools/build/variants.py: the real sources built into the Hub layout, checked by the tools of that ecosystem.

One session build (sm_90 only, to keep CI short) from two torch environments: this venv's torch 2.14.1 (CUDA 13.0)
and the CPU-only torch 2.13.0. That gives torch214-cxx11-cu130, torch213-cxx11-cpu and the stable-ABI variants
torch-stable-abi210-{cu130,cpu}. Every variant goes through kernel-abi-check and the real ``kernels`` library
(in a venv with the matching torch), and one round trip runs source → Hub (olah) → hub2wheel → pip → op.

The same build converted with ``hub2wheel --variant-wheels`` and indexed gives both kinds of wheel on one index
(``variant_index``): uv 0.13.9 with ``--preview-features wheel-variants`` installs ``img2gray`` by itself, the null
(CPU) variant on this machine and the CUDA one for a GPU it is told of (``NV_VARIANT_PROVIDER_FORCE_*``), while pip
sees only the backend-named wheels, as before.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import kernel_abi_check
import pytest
from packaging.version import Version as pv

from kernelwheel.format.digests import verify_digest
from kernelwheel.format.variant_folder import collect_files, read_metadata
from kernelwheel.index.writer import write_index
from kernelwheel.publish.git_transport import GitTransport
from kernelwheel.publish.release import publish
from kernelwheel.wheels.naming import WheelName
from tests.helpers.elf import demangled, dynamic_symbols
from tests.helpers.git_remotes import make_remote
from tests.helpers.hub_fixtures import olah_server, pip_install_by_name
from tests.helpers.index_servers import serve
from tests.helpers.repo import REPO_ROOT
from tests.helpers.venvs import fresh_venv, package_farm
from tools.build.errors import BuildFailed
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


# ------------------------------------------------------------------------------------------ wheel variants (uv)

VARIANT_WHEELS = {CUDA_CLASSIC: "cu130_torch214", CUDA_STABLE: "cu130", CPU_CLASSIC: "cpu_torch213", CPU_STABLE: "null"}


@pytest.fixture(scope="module")
def variant_index(variants_build: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session build converted by ``hub2wheel --variant-wheels`` and indexed: a wheelhouse with its simple/."""
    house = tmp_path_factory.mktemp("variant-index") / "wheelhouse"
    convert = subprocess.run(
        [sys.executable, "-m", "tools.hub2wheel", str(variants_build.parent), "--kernel-version", "0.1.0",
         "--variant-wheels", "--out", str(house)], cwd=REPO_ROOT, capture_output=True, text=True)
    assert convert.returncode == 0, convert.stderr[-3000:]
    labels = {p.name.removesuffix(".whl").rsplit("-", 1)[1] for p in house.glob("img2gray-*.whl")}
    assert labels == set(VARIANT_WHEELS.values()), sorted(p.name for p in house.iterdir())
    assert len(list(house.glob("img2gray_*.whl"))) == 4  # the backend-named wheels, as without the flag
    report = write_index(house)
    assert report.variants_files == ["img2gray-0.1.0-variants.json"]
    return house


def _uv() -> str:
    found = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    version = subprocess.run([found, "--version"], capture_output=True, text=True, check=True).stdout.split()[1]
    assert pv(version) >= pv("0.13.9"), f"uv {version}: wheel variants need uv 0.13.9 or newer"
    return found


def _venv_with_torch213(path: Path, torch213_base: Path) -> Path:
    """A venv without packages of its own that holds torch213_base's: each ``.dist-info`` copied (uv reads neither a
    .pth-shared folder nor a symlinked .dist-info), every other entry linked. uv sees torch 2.13.0+cpu installed."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    site = next((path / "lib").glob("python3.*/site-packages"))
    shared = next((torch213_base / "lib").glob("python3.*/site-packages"))
    for entry in shared.iterdir():
        if entry.name == "__pycache__" or (site / entry.name).exists():
            continue
        if entry.name.endswith(".dist-info"):
            shutil.copytree(entry, site / entry.name)
        else:
            (site / entry.name).symlink_to(entry)
    return path


def _uv_install(venv: Path, url: str, cache: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "PIP_", "NV_VARIANT_PROVIDER_"))}
    return subprocess.run(
        [_uv(), "pip", "install", "--no-config", "--preview-features", "wheel-variants", "--python",
         str(venv / "bin" / "python"), "--index-url", url, "img2gray"],
        capture_output=True, text=True, env={**clean, "UV_CACHE_DIR": str(cache), **env}, timeout=600)


def _installed_variant(venv: Path) -> dict[str, object]:
    """The installed img2gray's variant.json ``variants`` entry (label → properties)."""
    (dist_info,) = next((venv / "lib").glob("python3.*/site-packages")).glob("img2gray-0.1.0.dist-info")
    variants = json.loads((dist_info / "variant.json").read_text())["variants"]
    assert isinstance(variants, dict)
    return variants


def test_uv_installs_the_null_variant_without_a_gpu_and_the_op_runs(variant_index: Path, torch213_base: Path,
                                                                    tmp_path: Path) -> None:
    venv = _venv_with_torch213(tmp_path / "venv", torch213_base)
    with serve(variant_index) as host:
        install = _uv_install(venv, f"http://{host}/simple/", tmp_path / "uv-cache")
    assert install.returncode == 0, install.stdout + install.stderr
    assert "+ img2gray==0.1.0" in install.stderr and "+ torch" not in install.stderr  # torch is kept
    assert _installed_variant(venv) == {"null": {}}  # the stable CPU build
    check = run_json(venv / "bin" / "python", INSTALLED_CHECK)
    assert check["ok"] and check["torch"] == "2.13.0+cpu" and check["backend"] == "cpu", check


def test_uv_picks_the_cuda_variant_for_the_gpu_it_is_told_of(variant_index: Path, torch213_base: Path,
                                                             tmp_path: Path) -> None:
    venv = _venv_with_torch213(tmp_path / "venv", torch213_base)
    with serve(variant_index) as host:
        install = _uv_install(venv, f"http://{host}/simple/", tmp_path / "uv-cache",
                              NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION="13.0",
                              NV_VARIANT_PROVIDER_FORCE_SM_ARCH="9.0")
    assert install.returncode == 0, install.stdout + install.stderr
    variant = _installed_variant(venv)
    assert list(variant) == ["cu130"], variant  # the stable CUDA build; classic builds carry abi_dependency
    assert "90_real" in variant["cu130"]["nvidia"]["sm_arch"]  # type: ignore[index]  # read from the fat binary


def test_pip_sees_only_the_backend_named_wheels(variant_index: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    with serve(variant_index) as host:
        def download(project: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "pip", "download", "-vv", "--no-deps", "--index-url", f"http://{host}/simple/",
                 "-d", str(tmp_path / "dl"), project], capture_output=True, text=True, env=env, timeout=300)

        variants_only = download("img2gray")
        backend_named = download("img2gray-cpu")
    assert variants_only.returncode != 0 and "No matching distribution found for img2gray" in variants_only.stderr
    assert "invalid wheel filename" in variants_only.stdout + variants_only.stderr
    assert backend_named.returncode == 0, backend_named.stdout + backend_named.stderr
    assert [p.name for p in (tmp_path / "dl").iterdir()] == [
        "img2gray_cpu-0.1.0+torch2.13-cp39-abi3-manylinux_2_24_x86_64.whl"]
