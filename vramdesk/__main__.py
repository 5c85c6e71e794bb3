import sys

from vramdesk.main import main

sys.exit(main())
