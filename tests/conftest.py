import sys
from pathlib import Path

# The build helpers live next to the tests (tests/ is not a package).
sys.path.insert(0, str(Path(__file__).parent))
