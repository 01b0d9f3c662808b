import sys

from pioneer_grpc.cli import main

sys.exit(main())
