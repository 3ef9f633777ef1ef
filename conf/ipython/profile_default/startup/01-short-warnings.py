# Executed pages show a warning as its category and message only. Python's default format
# starts with the file the warning came from: a path of the build machine (site-packages, or
# /tmp/ipykernel_<pid>/<n>.py for a cell) that also changes from one build to the next.
import warnings


def _category_and_message(message, category, filename, lineno, line=None):
    return f"{category.__name__}: {message}\n"


warnings.formatwarning = _category_and_message
del warnings, _category_and_message  # keep the notebook's namespace clean
