from wikimem_watch.cli import main

raise SystemExit(main())
