"""Fixtures over tests/helpers/sigstore_fixtures.py, for a test module that names this plugin:
``pytest_plugins = ["tests.helpers.sigstore_plugin"]`` (a module of its own, so that pytest imports it first and
the test module's own imports of sigstore_fixtures leave its assertion rewriting alone).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.sigstore_fixtures import SigstoreInstance


@pytest.fixture(scope="module")
def sigstore() -> SigstoreInstance:
    """The test module's own Sigstore instance."""
    return SigstoreInstance()


@pytest.fixture(scope="module")
def trusted_root(sigstore: SigstoreInstance, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``trusted_root.json`` for ``sigstore``."""
    return sigstore.write_trusted_root(tmp_path_factory.mktemp("sigstore") / "trusted_root.json")
