"""`python -m kafka_shell` runs the shell, like the `kafka-shell` console script."""

import sys

from kafka_shell.face.main import main

sys.exit(main())
