import sys

from workers.measure.cli import main

sys.exit(main())
