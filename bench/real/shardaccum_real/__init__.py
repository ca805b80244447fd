"""shardaccum_real: the real systems' side of shardaccum (issue 13, docs/DESIGN.md §5).

The suite's gradient generator and exact reference in numpy (``generator``, bit-identical to
common/gradient_gen.hpp), ctypes over libshardaccum_gen.so (``genlib``, capi/shardaccum_gen.h) and
the oracle's verdict on a rank's accumulated shard (``oracle``, strategies/oracle.hpp's rule), used
by the runner bench/real/run.py. Importing the package imports nothing; ``generator`` needs numpy,
``oracle.check_tensor`` torch (imported inside it).
"""
