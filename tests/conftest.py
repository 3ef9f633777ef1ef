import sys
from pathlib import Path

# The build helpers live next to the tests (tests/ is not a package); bench/ is at the root.
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(1, str(Path(__file__).parents[1]))
