"""kernelwheel.format.variant_pieces: a piece read on its own takes ASCII only."""

from __future__ import annotations

import pytest

from kernelwheel.format.variant_pieces import Backend
from kernelwheel.io.errors import InvalidVariantName


def test_backend_parse_is_ascii_only() -> None:
    with pytest.raises(InvalidVariantName, match="ASCII"):
        Backend.parse("cu１３０")
