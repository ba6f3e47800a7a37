from tpuscope.cli import main

raise SystemExit(main())
