"""The Dagster layer: it wires the pure core into assets, checks, resources, partitions, schedules and sensors."""

import warnings

import dagster as dg

# We rely on Dagster APIs it marks beta or preview (data versions on outputs, partitioned asset checks, the
# observable source asset). Their warnings came at every start of `dagster dev` and four times in the log of every
# run the daemon launched (found on the 3.11/3.13 new-user pass): nothing a user can act on. Set here, before any
# asset is defined, so every process that loads the code location (code server, run worker) has it.
warnings.filterwarnings("ignore", category=dg.BetaWarning)
warnings.filterwarnings("ignore", category=dg.PreviewWarning)
