"""`python -m kafka_shell` runs the shell, like the `kafka-shell` console script."""

import sys

from kafka_shell.face.launch import main

sys.exit(main())
