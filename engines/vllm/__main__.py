import sys

from engines.vllm.server import main

sys.exit(main())
