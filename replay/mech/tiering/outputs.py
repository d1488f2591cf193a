"""FAST VP adds no per-request outcome (its relocations are records, its shares per-interval tables)."""

OUTCOMES = ()
