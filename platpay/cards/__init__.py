"""Cards: issuing, funding sources, authorization decisioning, clearing, returns (SPEC §2–§4.9)."""
