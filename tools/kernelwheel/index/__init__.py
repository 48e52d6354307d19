"""A package index, both ways: a static PEP 503/658 index written for a wheelhouse (indexed_wheel, pages, state,
overlap, writer), and an index read (client) to plan an install that keeps torch: the target probed
(target_environment), the wheel chosen (install_plan), the command printed or run without its passwords
(install_command_line). Imports io/, format/, wheels/.
"""
