"""``build.toml`` → ``BuildManifest``: the kernel's name, version, backends and CUDA capabilities.

``python tools/build/manifest.py build.toml`` prints ``KEY=VALUE`` lines for CMake, which cannot read TOML itself; it
runs with the build's interpreter and needs nothing beyond the standard library (``tomllib``, or ``tomli`` on 3.9/3.10).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on old interpreters
    import tomli as tomllib

try:
    from tools.build.errors import InvalidManifest
except ImportError:  # run by path by CMake (``python tools/build/manifest.py``), where ``tools`` is not a package
    class InvalidManifest(ValueError):  # type: ignore[no-redef]  # the same name, when run by path without tools/
        pass


@dataclass(frozen=True)
class BuildManifest:
    name: str
    version: str
    backends: tuple[str, ...]
    cuda_capabilities: tuple[str, ...]
    license: str | None = None
    stable_abi: str | None = None  # [torch] stable-abi: the oldest torch a stable-ABI build supports, e.g. "2.10"

    @property
    def python_package(self) -> str:
        """The import name: kernel-builder maps '-' in the kernel name to '_'."""
        return self.name.replace("-", "_")

    @classmethod
    def load(cls, path: Path) -> BuildManifest:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise InvalidManifest(f"{path}: cannot be read as TOML: {exc}") from None
        general = data.get("general", {})
        name, version = general.get("name"), general.get("version")
        if not isinstance(name, str) or not isinstance(version, str):
            raise InvalidManifest(
                f"{path}: [general] needs string fields 'name' and 'version' (e.g. name = \"img2gray\", "
                f"version = \"0.1.0\"); got name={name!r}, version={version!r}"
            )
        kernels = data.get("kernel", {})
        capabilities: list[str] = []
        for kernel in kernels.values():
            for cap in kernel.get("cuda-capabilities", []):
                if cap not in capabilities:
                    capabilities.append(cap)
        stable_abi = data.get("torch", {}).get("stable-abi")
        if stable_abi is not None and not (isinstance(stable_abi, str) and _is_minor(stable_abi)):
            raise InvalidManifest(
                f"{path}: [torch] stable-abi must be a torch minor such as \"2.10\"; got {stable_abi!r}"
            )
        license_ = general.get("license")
        return cls(name, version, tuple(general.get("backends", [])), tuple(capabilities),
                   license_ if isinstance(license_, str) else None, stable_abi)


def _is_minor(text: str) -> bool:
    major, _, minor = text.partition(".")
    return major.isdigit() and minor.isdigit()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python tools/build/manifest.py BUILD_TOML", file=sys.stderr)
        return 2
    try:
        manifest = BuildManifest.load(Path(args[0]))
    except InvalidManifest as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"NAME={manifest.name}")
    print(f"VERSION={manifest.version}")
    print(f"CUDA_CAPABILITIES={';'.join(manifest.cuda_capabilities)}")
    print(f"STABLE_ABI={manifest.stable_abi or ''}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
