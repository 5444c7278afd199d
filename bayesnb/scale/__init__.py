"""Fitting beyond one array in memory: statistics are sums, so shards merge exactly.

* :mod:`bayesnb.scale.distributed`: fit from Dask arrays and data frames.
* :mod:`bayesnb.scale.streaming`: fit from files or iterators of chunks.
"""
