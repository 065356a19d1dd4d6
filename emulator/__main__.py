from emulator.cli import main

raise SystemExit(main())
