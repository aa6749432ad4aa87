"""The benchmark families r2med ships, each one plug-in module: :mod:`.r2med` (R2MED) and :mod:`.bright` (BRIGHT).

A family module owns everything that differs between families -- its task names and aliases, its protocol, how its
tasks load, its ``r2med tasks`` table, its per-model settings -- behind :class:`r2med.data.benchmarks.Benchmark`;
the registry there loads these modules on the first question (nothing imports them by name), as it loads another
package's families from the ``r2med.benchmarks`` entry point.
"""
