# torch.profiler (Kineto) writes "USDT:<date> <pid>:<tid> ...] profiler_start" (and _stop) to the
# process's stderr at its default log level, which an executed page would show as output that
# changes with every build. Level 6 keeps its errors only. Read when the profiler first starts.
import os

os.environ.setdefault("KINETO_LOG_LEVEL", "6")
del os  # keep the notebook's namespace clean
