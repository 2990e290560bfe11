import sys

from greenops.cli import main

sys.exit(main())
