"""A package index, both ways: a static PEP 503/658 index written for a wheelhouse (wheels, pages, state, overlap,
writer), and an index read (client) to plan an install that keeps torch (install_plan). Imports io/, format/, wheels/.
"""
