from wikimem_watch.shells.cli import main

raise SystemExit(main())
