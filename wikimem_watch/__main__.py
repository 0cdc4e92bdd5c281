import os
import sys

# ``python -m wikimem_watch`` puts the working directory first on sys.path. Run inside a vault
# synced from elsewhere, a module there would shadow a library imported later (yaml for front
# matter, markdown_it for a risky note) and run in the daemon (ADR-0010). This package is
# imported by now, and its own modules are found through its path, not sys.path.
if sys.path and not sys.flags.safe_path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from wikimem_watch.shells.cli import main

raise SystemExit(main())
