"""A static PEP 503/658 index: wheels (what is indexed), pages (HTML), state (incremental runs), writer, client."""
