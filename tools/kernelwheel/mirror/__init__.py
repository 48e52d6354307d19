"""A private index kept in sync with the Hub: the configuration, the per-kernel state, the plan of a run and the run.

config (the TOML file), state (what was converted, one file per kernel), plan (repositories, shards, new release
tags: listings only), run (the conversions through hub2wheel's pipeline, then the index). Imports io/, format/,
hub/, wheels/, index/.
"""
