"""The small helpers every layer may use: errors, atomic writes, limited reads, untrusted JSON, caches, the console,
URLs and answer deadlines. Nothing here imports another layer of kernelwheel."""
